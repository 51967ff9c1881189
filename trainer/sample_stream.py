"""Training data as one endless, numbered stream of samples.

Sample ``k`` of the stream is a pure function of (seed, k), and global step ``s`` consumes the
samples ``[s*G, (s+1)*G)`` where G is the global batch, rank ``r`` taking its contiguous share.
The only data position a checkpoint needs is therefore "how many samples were consumed", and a
resumed run sees exactly the batches the uninterrupted run would have seen, whatever the number
of DataLoader workers and however much they had prefetched when the job was stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler
from torchvision import datasets, transforms

# Independent random streams derived from the one --seed.
_PROTOTYPE_STREAM = 0
_SAMPLE_STREAM = 1
_EPOCH_STREAM = 2
_PROTOTYPE_SIZE = 4
_NOISE = 1.0


def derive_seed(seed: int, *key: int) -> int:
    """A 63-bit seed for one purpose; SeedSequence keeps the derived streams uncorrelated."""
    state = np.random.SeedSequence(seed, spawn_key=key).generate_state(1, np.uint64)[0]
    return int(state) >> 1


class SyntheticImages(Dataset[tuple[torch.Tensor, int]]):
    """Noisy copies of one low-resolution prototype per class: random data a ViT can still learn.

    Learnable data makes a falling loss visible in the demo's logs; the noise keeps it from being
    trivial.
    """

    def __init__(self, seed: int, num_classes: int, img_size: int) -> None:
        self.seed = seed
        self.num_classes = num_classes
        self.img_size = img_size
        generator = torch.Generator().manual_seed(derive_seed(seed, _PROTOTYPE_STREAM))
        self._prototypes = torch.randn(num_classes, 3, _PROTOTYPE_SIZE, _PROTOTYPE_SIZE, generator=generator)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        generator = torch.Generator().manual_seed(derive_seed(self.seed, _SAMPLE_STREAM, index))
        label = int(torch.randint(self.num_classes, (1,), generator=generator))
        size = (self.img_size, self.img_size)
        prototype = F.interpolate(self._prototypes[label : label + 1], size=size, mode="nearest")[0]
        noise = torch.randn(3, *size, generator=generator)
        return prototype + _NOISE * noise, label


class ShuffledImageFolder(Dataset[tuple[torch.Tensor, int]]):
    """An image-folder channel (one subdirectory per class) read in a fresh seeded order each epoch."""

    def __init__(self, root: Path, seed: int, img_size: int) -> None:
        transform = transforms.Compose(
            [
                transforms.Resize((img_size, img_size)),
                transforms.ToTensor(),
                transforms.Normalize(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)),
            ]
        )
        self._images = datasets.ImageFolder(str(root), transform=transform)
        self.seed = seed
        self.classes = self._images.classes
        self._epoch = -1
        self._order = torch.empty(0, dtype=torch.int64)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def __len__(self) -> int:
        return len(self._images)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        epoch, position = divmod(index, len(self._images))
        if epoch != self._epoch:
            generator = torch.Generator().manual_seed(derive_seed(self.seed, _EPOCH_STREAM, epoch))
            self._order = torch.randperm(len(self._images), generator=generator)
            self._epoch = epoch
        return self._images[int(self._order[position])]


class RankShare(Sampler[int]):
    """This rank's indices of the global stream, from a given number of samples already consumed."""

    def __init__(self, samples_seen: int, batch_size: int, rank: int, world_size: int) -> None:
        self.samples_seen = samples_seen
        self.batch_size = batch_size
        self.rank = rank
        self.world_size = world_size

    def __iter__(self) -> Iterator[int]:
        global_batch = self.batch_size * self.world_size
        for batch in count():
            first = self.samples_seen + batch * global_batch + self.rank * self.batch_size
            yield from range(first, first + self.batch_size)


def batches(
    dataset: Dataset[tuple[torch.Tensor, int]], share: RankShare, num_workers: int, pin_memory: bool, seed: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless batches for this rank.

    The loader gets its own generator: otherwise creating its iterator draws from the global torch
    RNG, and a resumed run (which creates one more iterator than the uninterrupted run) would drift.
    """
    loader = DataLoader(
        dataset,
        batch_size=share.batch_size,
        sampler=share,
        num_workers=num_workers,
        pin_memory=pin_memory,
        drop_last=True,
        generator=torch.Generator().manual_seed(seed),
    )
    return iter(loader)
