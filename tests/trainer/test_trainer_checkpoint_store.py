"""CheckpointStore: atomic files, rotation, and refusing anything that is not a whole checkpoint."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch
from trainer_support import checkpoint_store

BackgroundWriter = checkpoint_store.BackgroundWriter
CheckpointStore = checkpoint_store.CheckpointStore
CorruptCheckpoint = checkpoint_store.CorruptCheckpoint


def state(step: int) -> dict:
    generator = torch.Generator().manual_seed(step)
    return {"step": step, "weights": torch.randn(64, 64, generator=generator), "nested": {"ids": [1, 2, step]}}


def skipped_steps(store: checkpoint_store.CheckpointStore) -> tuple[int | None, list[int]]:
    skipped: list[int] = []
    found = store.latest_valid(on_skip=lambda step, exc: skipped.append(step))
    return (found[0] if found else None), skipped


def test_round_trip_is_exact(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep=2)
    original = state(7)

    store.write(7, original)
    loaded = store.read(7)

    assert torch.equal(loaded["weights"], original["weights"])
    assert loaded["nested"] == {"ids": [1, 2, 7]}


def test_write_leaves_only_the_final_name(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep=2)

    saved = store.write(3, state(3))

    assert [entry.name for entry in tmp_path.iterdir()] == ["step-000000003.ckpt"]
    assert saved.path == tmp_path / "step-000000003.ckpt"
    assert saved.seconds >= 0


def test_keeps_only_the_newest(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep=2)

    for step in (10, 20, 30, 40):
        store.write(step, state(step))

    assert store.steps() == [30, 40]


def test_keep_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        CheckpointStore(tmp_path, keep=0)


def test_no_checkpoints_in_missing_directory(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "absent", keep=1)

    assert store.steps() == []
    assert store.latest_valid(on_skip=lambda step, exc: None) is None


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated-half"),
        pytest.param(lambda data: data[:-1], id="truncated-one-byte"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: data[:100] + bytes([data[100] ^ 0xFF]) + data[101:], id="flipped-byte"),
        pytest.param(lambda data: data + b"junk", id="trailing-bytes"),
    ],
)
def test_damaged_newest_is_skipped_for_the_previous(tmp_path: Path, damage) -> None:
    store = CheckpointStore(tmp_path, keep=3)
    store.write(10, state(10))
    store.write(20, state(20))
    newest = store.path_for(20)
    newest.write_bytes(damage(newest.read_bytes()))

    found, skipped = skipped_steps(store)

    assert found == 10
    assert skipped == [20]
    with pytest.raises(CorruptCheckpoint):
        store.read(20)


def test_plain_torch_file_under_a_checkpoint_name_is_rejected(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep=2)
    torch.save(state(5), store.path_for(5))

    with pytest.raises(CorruptCheckpoint, match="footer"):
        store.read(5)


def test_partial_files_are_ignored_and_removed(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep=2)
    store.write(10, state(10))
    (tmp_path / ".partial-step-000000020.ckpt.4242").write_bytes(b"half a checkpoint")
    (tmp_path / "notes.txt").write_text("not a checkpoint")

    assert store.steps() == [10]
    store.remove_partials()

    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["notes.txt", "step-000000010.ckpt"]


def test_snapshot_is_independent_of_the_live_tensors() -> None:
    weights, moments = torch.zeros(4), [torch.ones(2)]
    live = {"weights": weights, "moments": moments, "meta": ("adamw", 3)}

    copy = checkpoint_store.snapshot(live)
    weights.add_(1)
    moments[0].add_(1)

    assert torch.equal(copy["weights"], torch.zeros(4))
    assert torch.equal(copy["moments"][0], torch.ones(2))
    assert copy["meta"] == ("adamw", 3)


def test_background_writer_reports_each_save_in_order(tmp_path: Path) -> None:
    reported: list[checkpoint_store.Saved] = []
    writer = BackgroundWriter(CheckpointStore(tmp_path, keep=5), reported.append)

    for step in (1, 2, 3):
        writer.submit(step, state(step))
    writer.wait()

    assert [saved.step for saved in reported] == [1, 2, 3]
    assert all(thread.name != "checkpoint-writer" for thread in threading.enumerate())


def test_background_write_failure_surfaces_on_the_training_thread(tmp_path: Path) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    writer = BackgroundWriter(CheckpointStore(blocker, keep=1), lambda saved: None)

    writer.submit(1, state(1))
    with pytest.raises(RuntimeError, match="background checkpoint write failed"):
        writer.wait()
    writer.wait()  # the error is reported once, not forever
