"""Whole training runs in this process: outputs, resume, corrupt checkpoints, folder data, RNG state."""

from __future__ import annotations

import json
import math
import os
import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file
from trainer_support import FOREIGN_PREFIXES, TINY, checkpoint_store, file_bytes, train

CheckpointStore = checkpoint_store.CheckpointStore


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trainer reads SM_*/torchrun variables; the developer's shell must not leak into a test."""
    for key in list(os.environ):
        if key.startswith(FOREIGN_PREFIXES):
            monkeypatch.delenv(key)


class Job:
    """One job's directories; ``train`` runs the trainer in-process and returns what it printed."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.checkpoints = root / "checkpoints"
        self.model_dir = root / "model"
        self._capsys = capsys

    def train(self, *args: str) -> str:
        self._capsys.readouterr()
        status = train.main(
            [*TINY, "--checkpoint-dir", str(self.checkpoints), "--model-dir", str(self.model_dir), *args]
        )
        assert status == 0
        return self._capsys.readouterr().out

    @property
    def model_bytes(self) -> bytes:
        return file_bytes(self.model_dir / "model.safetensors")

    @property
    def store(self) -> checkpoint_store.CheckpointStore:
        return CheckpointStore(self.checkpoints, keep=1)


@pytest.fixture
def job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Job:
    return Job(tmp_path / "job", capsys)


@pytest.fixture
def other_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Job:
    return Job(tmp_path / "other", capsys)


RUN = [
    "--max-steps",
    "24",
    "--log-every",
    "4",
    "--drop-path",
    "0.1",
    "--checkpoint-every-steps",
    "8",
    "--keep-checkpoints",
    "3",
]


def test_completed_run_writes_model_metrics_and_progress_lines(job: Job) -> None:
    out = job.train(*RUN)

    weights = load_file(job.model_dir / "model.safetensors")
    assert weights["head.weight"].shape == (10, 32)
    metrics = json.loads((job.model_dir / "metrics.json").read_text())
    assert metrics["step"] == 24
    assert metrics["world_size"] == 1 and metrics["global_batch_size"] == 8
    assert metrics["resumed_from_step"] is None
    assert metrics["samples_per_sec"] > 0 and math.isfinite(metrics["loss"])
    assert job.store.steps() == [8, 16, 24]
    assert "no checkpoint in" in out
    progress = [line for line in out.splitlines() if line.startswith("step=")]
    assert len(progress) == 6
    for definition in train.METRIC_DEFINITIONS:
        assert re.search(definition["Regex"], progress[-1]), definition["Name"]
    assert re.findall(train.METRIC_DEFINITIONS[3]["Regex"], progress[-1]) == ["24"]


def test_resume_from_an_earlier_checkpoint_is_bitwise_exact(job: Job, other_job: Job) -> None:
    other_job.train(*RUN)
    job.train(*RUN)
    for step in (16, 24):
        job.store.path_for(step).unlink()
    (job.model_dir / "model.safetensors").unlink()

    out = job.train(*RUN)

    assert "resumed from checkpoint step 8" in out.splitlines()
    assert job.model_bytes == other_job.model_bytes


def test_different_seed_gives_a_different_model(job: Job, other_job: Job) -> None:
    """Guards the exactness tests against comparing two things that cannot differ."""
    job.train(*RUN)
    other_job.train(*RUN, "--seed", "1")

    assert job.model_bytes != other_job.model_bytes


def test_damaged_newest_checkpoint_is_skipped(job: Job, other_job: Job) -> None:
    other_job.train(*RUN)
    job.train(*RUN)
    newest = job.store.path_for(24)
    newest.write_bytes(newest.read_bytes()[:1000])
    job.store.path_for(16).write_bytes(b"")

    out = job.train(*RUN)

    assert "skipping checkpoint step 24: " in out
    assert "skipping checkpoint step 16: " in out
    assert "resumed from checkpoint step 8" in out.splitlines()
    assert job.model_bytes == other_job.model_bytes


def test_restarting_a_finished_job_only_rewrites_its_outputs(job: Job) -> None:
    job.train(*RUN)
    first = job.model_bytes

    out = job.train(*RUN)

    assert "resumed from checkpoint step 24" in out.splitlines()
    assert not [line for line in out.splitlines() if line.startswith("step=")]
    assert job.model_bytes == first
    assert json.loads((job.model_dir / "metrics.json").read_text())["resumed_from_step"] == 24


def test_time_based_checkpoints(job: Job) -> None:
    job.train("--max-steps", "300", "--checkpoint-every-seconds", "0.3", "--keep-checkpoints", "100")

    metrics = json.loads((job.model_dir / "metrics.json").read_text())
    assert metrics["checkpoints_written"] >= 1
    assert len(job.store.steps()) == metrics["checkpoints_written"] + 1  # plus the final one


def test_folder_channel(job: Job, tmp_path: Path) -> None:
    channel = tmp_path / "training"
    for label, colour in enumerate([(250, 10, 10), (10, 250, 10), (10, 10, 250)]):
        (channel / f"c{label}").mkdir(parents=True)
        for index in range(5):
            Image.new("RGB", (20, 20), colour).save(channel / f"c{label}" / f"{index}.png")

    out = job.train("--data", "folder", "--data-dir", str(channel), "--max-steps", "6")

    assert "training complete at step 6" in out
    assert load_file(job.model_dir / "model.safetensors")["head.weight"].shape == (3, 32)


def test_every_rng_survives_a_checkpoint_file(tmp_path: Path) -> None:
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    np.random.standard_normal()  # leaves a cached Gaussian in NumPy's legacy state
    store = CheckpointStore(tmp_path, keep=1)
    store.write(1, {"rng": train.capture_rng()})

    def draws() -> tuple[float, float, float]:
        return random.random(), float(np.random.standard_normal()), float(torch.rand(1))

    expected = draws()
    train.restore_rng(store.read(1)["rng"])

    assert draws() == expected


def test_a_log_line_is_one_write_so_ranks_sharing_a_pipe_never_splice_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[str] = []

    class Pipe:
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

        def flush(self) -> None:
            writes.append("<flush>")

    monkeypatch.setattr(sys, "stdout", Pipe())

    train.log("rank=1 world_size=2 device=cpu start_step=31")

    assert writes == ["rank=1 world_size=2 device=cpu start_step=31\n", "<flush>"]
