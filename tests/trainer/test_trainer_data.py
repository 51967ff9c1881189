"""The sample stream: the same batches whatever the world size, worker count or resume point."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from trainer_support import sample_stream

RankShare = sample_stream.RankShare
ShuffledImageFolder = sample_stream.ShuffledImageFolder
SyntheticImages = sample_stream.SyntheticImages
batches = sample_stream.batches


def take(sampler: sample_stream.RankShare, count: int) -> list[int]:
    return list(islice(iter(sampler), count))


def test_ranks_split_each_global_batch_contiguously() -> None:
    rank0 = take(RankShare(samples_seen=0, batch_size=2, rank=0, world_size=2), 4)
    rank1 = take(RankShare(samples_seen=0, batch_size=2, rank=1, world_size=2), 4)

    assert rank0 == [0, 1, 4, 5]
    assert rank1 == [2, 3, 6, 7]


def test_resuming_continues_the_same_stream() -> None:
    whole = take(RankShare(samples_seen=0, batch_size=3, rank=0, world_size=1), 12)
    resumed = take(RankShare(samples_seen=6, batch_size=3, rank=0, world_size=1), 6)

    assert resumed == whole[6:]


def test_synthetic_sample_depends_only_on_seed_and_index() -> None:
    first = SyntheticImages(seed=3, num_classes=5, img_size=16)
    again = SyntheticImages(seed=3, num_classes=5, img_size=16)
    other_seed = SyntheticImages(seed=4, num_classes=5, img_size=16)

    image, label = first[41]
    assert image.shape == (3, 16, 16)
    assert 0 <= label < 5
    assert torch.equal(again[41][0], image) and again[41][1] == label
    assert not torch.equal(first[42][0], image)
    assert not torch.equal(other_seed[41][0], image)


def test_synthetic_classes_are_learnable_from_their_prototype() -> None:
    """Averaging many samples of a class recovers its prototype; different classes differ."""
    data = SyntheticImages(seed=0, num_classes=2, img_size=8)
    by_class: dict[int, list[torch.Tensor]] = {0: [], 1: []}
    for index in range(400):
        image, label = data[index]
        by_class[label].append(image)

    means = {label: torch.stack(images).mean(0) for label, images in by_class.items()}

    assert (means[0] - means[1]).abs().mean() > 0.5


def test_loader_batches_match_the_dataset_and_ignore_worker_count() -> None:
    data = SyntheticImages(seed=1, num_classes=10, img_size=8)
    share = RankShare(samples_seen=16, batch_size=4, rank=1, world_size=2)

    in_process = list(islice(batches(data, share, num_workers=0, pin_memory=False, seed=0), 2))
    with_workers = list(islice(batches(data, share, num_workers=2, pin_memory=False, seed=0), 2))

    expected_first = torch.stack([data[index][0] for index in (20, 21, 22, 23)])
    assert torch.equal(in_process[0][0], expected_first)
    for (images_a, labels_a), (images_b, labels_b) in zip(in_process, with_workers, strict=True):
        assert torch.equal(images_a, images_b) and torch.equal(labels_a, labels_b)


def test_creating_a_loader_leaves_the_global_rng_alone() -> None:
    data = SyntheticImages(seed=1, num_classes=10, img_size=8)
    torch.manual_seed(123)
    before = torch.get_rng_state()

    next(batches(data, RankShare(0, 2, 0, 1), num_workers=0, pin_memory=False, seed=0))

    assert torch.equal(torch.get_rng_state(), before)


@pytest.fixture
def image_folder(tmp_path: Path) -> Path:
    """Three classes of small PNGs, each class a distinct colour."""
    rng = np.random.default_rng(0)
    for label, colour in enumerate([(255, 0, 0), (0, 255, 0), (0, 0, 255)]):
        directory = tmp_path / f"class_{label}"
        directory.mkdir()
        for index in range(4):
            pixels = np.clip(np.array(colour) + rng.integers(-20, 20, size=(12, 12, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(directory / f"{index}.png")
    return tmp_path


def test_folder_reads_every_image_once_per_epoch_in_a_seeded_order(image_folder: Path) -> None:
    folder = ShuffledImageFolder(image_folder, seed=0, img_size=16)
    again = ShuffledImageFolder(image_folder, seed=0, img_size=16)

    epoch0 = [folder[index] for index in range(12)]
    epoch1 = [folder[index] for index in range(12, 24)]

    assert folder.num_classes == 3 and folder.classes == ["class_0", "class_1", "class_2"]
    assert epoch0[0][0].shape == (3, 16, 16)
    assert sorted(label for _, label in epoch0) == [0] * 4 + [1] * 4 + [2] * 4
    assert [label for _, label in epoch0] != [label for _, label in epoch1] or not all(
        torch.equal(a[0], b[0]) for a, b in zip(epoch0, epoch1, strict=True)
    )
    assert all(torch.equal(again[index][0], epoch0[index][0]) for index in range(12))


def test_folder_labels_follow_the_class_directories(image_folder: Path) -> None:
    folder = ShuffledImageFolder(image_folder, seed=5, img_size=8)

    for index in range(12):
        image, label = folder[index]
        dominant_channel = int(image.mean(dim=(1, 2)).argmax())
        assert dominant_channel == label
