"""smq's reference trainer: a timm Vision Transformer that can be stopped at any moment and resumed.

A preemptive queue stops jobs with SIGTERM (SageMaker's StopTrainingJob, then SIGKILL after a
grace period) and starts them again later with the same checkpoint directory. This script is the
pattern a job follows to lose nothing when that happens:

- it checkpoints every ``--checkpoint-every-seconds`` / ``--checkpoint-every-steps`` and, on
  SIGTERM, at the next step boundary, then exits with status 0;
- on start it resumes from the newest checkpoint that verifies and prints
  ``resumed from checkpoint step N``;
- a checkpoint holds everything the next step depends on (weights, AdamW moments, LR schedule,
  step, samples consumed, Python/NumPy/torch/CUDA RNG state of every rank), so on CPU an
  interrupted and resumed run ends with a ``model.safetensors`` bitwise identical to an
  uninterrupted one.

Progress log line, every ``--log-every`` steps, on the first rank (see METRIC_DEFINITIONS)::

    step=120 loss=1.8342 samples_per_sec=412.7 lr=4.870e-04

Run it plainly, under ``torchrun`` (DDP: gloo on CPU, nccl on GPU), or as a SageMaker entry point.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import hparams
import numpy as np
import timm
import topology
import torch
import torch.distributed as dist
import torch.multiprocessing
import torch.nn.functional as F
from checkpoint_store import BackgroundWriter, CheckpointStore, CorruptCheckpoint, Saved, snapshot
from safetensors.torch import save as safetensors_bytes
from sample_stream import RankShare, ShuffledImageFolder, SyntheticImages, batches, derive_seed
from torch.nn.parallel import DistributedDataParallel
from torch.optim.lr_scheduler import LambdaLR

CHECKPOINT_FORMAT = 1
DEFAULT_SYNTHETIC_CLASSES = 10
_RANK_STREAM = 3
_LOADER_STREAM = 4

METRIC_DEFINITIONS = [
    {"Name": "train:loss", "Regex": r"step=\d+ loss=([-+0-9.eE]+)"},
    {"Name": "train:samples_per_sec", "Regex": r"samples_per_sec=([0-9.]+)"},
    {"Name": "train:lr", "Regex": r"lr=([-+0-9.eE]+)"},
    {"Name": "train:step", "Regex": r"step=(\d+) loss="},
]
"""SageMaker ``metric_definitions`` for the progress line; trainer/README.md shows the same list."""


def log(message: str) -> None:
    """Unbuffered, so a supervisor reading the pipe sees a line when it happens, and written in one
    call: ranks sharing a host's output pipe then never splice their lines together (print writes
    the text and its newline separately when Python runs unbuffered)."""
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


class StopRequest:
    """Set by SIGTERM and acted on between steps, so no checkpoint captures a half-applied update."""

    def __init__(self) -> None:
        self.requested = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True

    def install(self) -> StopRequest:
        """For the rest of the process: a second SIGTERM while a stopped trainer tears down
        (which takes a second or so) must not turn its clean exit into death by signal."""
        signal.signal(signal.SIGTERM, self._handle)
        return self

    @contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """For the duration of an in-process call (tests, benchmarks), then the previous handler."""
        previous = signal.signal(signal.SIGTERM, self._handle)
        try:
            yield self
        finally:
            signal.signal(signal.SIGTERM, previous)


class Group:
    """The few collectives the loop needs; in a single process each is the local identity."""

    def __init__(self, world_size: int, device: torch.device) -> None:
        self.world_size = world_size
        self.device = device

    @classmethod
    def join(cls, placement: topology.Placement, device: torch.device) -> Group:
        if placement.world_size > 1:
            dist.init_process_group(
                backend="nccl" if device.type == "cuda" else "gloo",
                init_method="env://",
                rank=placement.rank,
                world_size=placement.world_size,
            )
        return cls(placement.world_size, device)

    def leave(self) -> None:
        if self.world_size > 1:
            dist.destroy_process_group()

    def agree(self, *flags: bool) -> list[bool]:
        """Each flag true on any rank becomes true on all: ranks must stop and save at the same step."""
        if self.world_size == 1:
            return list(flags)
        values = torch.tensor([float(flag) for flag in flags], device=self.device)
        dist.all_reduce(values, op=dist.ReduceOp.MAX)
        return [bool(value) for value in values.tolist()]

    def mean(self, value: torch.Tensor) -> float:
        if self.world_size == 1:
            return float(value)
        total = value.detach().float().clone()
        dist.all_reduce(total)
        return float(total) / self.world_size

    def gather(self, value: Any) -> list[Any]:
        if self.world_size == 1:
            return [value]
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, value)
        return gathered

    def from_leader(self, value: Any) -> Any:
        if self.world_size == 1:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def capture_rng() -> dict[str, Any]:
    """Every RNG this process could draw from, in types ``torch.load(weights_only=True)`` accepts."""
    numpy_state = np.random.get_state(legacy=False)
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {
            "key": torch.from_numpy(numpy_state["state"]["key"].astype(np.int64)),
            "pos": int(numpy_state["state"]["pos"]),
            "has_gauss": int(numpy_state["has_gauss"]),
            "gauss": float(numpy_state["gauss"]),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    numpy_state = state["numpy"]
    np.random.set_state(
        {
            "bit_generator": "MT19937",
            "state": {"key": numpy_state["key"].numpy().astype(np.uint32), "pos": numpy_state["pos"]},
            "has_gauss": numpy_state["has_gauss"],
            "gauss": numpy_state["gauss"],
        }
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def build_model(hp: argparse.Namespace, num_classes: int) -> torch.nn.Module:
    """A timm ViT; explicit sizes override the named model's, so tiny test models stay real ViTs."""
    size = {
        name: getattr(hp, name)
        for name in ("embed_dim", "depth", "num_heads", "patch_size")
        if getattr(hp, name) is not None
    }
    return timm.create_model(
        hp.model, pretrained=False, num_classes=num_classes, img_size=hp.img_size, drop_path_rate=hp.drop_path, **size
    )


def build_optimizer(model: torch.nn.Module, hp: argparse.Namespace) -> torch.optim.AdamW:
    """AdamW without weight decay on biases, norms and the position/class tokens (as timm does)."""
    no_weight_decay = getattr(model, "no_weight_decay", None)
    skip = set(no_weight_decay()) if callable(no_weight_decay) else set()
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for name, parameter in model.named_parameters():
        (no_decay if parameter.ndim <= 1 or name in skip else decay).append(parameter)
    groups = [{"params": decay, "weight_decay": hp.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=hp.lr)


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warmup to the peak, then cosine decay towards zero at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def build_schedule(optimizer: torch.optim.Optimizer, hp: argparse.Namespace) -> LambdaLR:
    return LambdaLR(optimizer, partial(lr_factor, warmup=hp.warmup_steps, total=hp.max_steps))


def build_dataset(hp: argparse.Namespace) -> tuple[torch.utils.data.Dataset, int]:
    if hp.data == "folder":
        folder = ShuffledImageFolder(hp.data_dir, hp.seed, hp.img_size)
        num_classes = hp.num_classes or folder.num_classes
        if num_classes < folder.num_classes:
            raise ValueError(f"--num-classes {num_classes} but {hp.data_dir} has {folder.num_classes} classes")
        return folder, num_classes
    num_classes = hp.num_classes or DEFAULT_SYNTHETIC_CLASSES
    return SyntheticImages(hp.seed, num_classes, hp.img_size), num_classes


def pick_device(placement: topology.Placement) -> torch.device:
    if torch.cuda.is_available():
        torch.cuda.set_device(placement.local_rank)
        return torch.device("cuda", placement.local_rank)
    return torch.device("cpu")


def find_resume_point(store: CheckpointStore, group: Group, placement: topology.Placement) -> dict[str, Any] | None:
    """The leader picks the newest valid checkpoint; every rank then loads that same step."""
    found = None
    if placement.is_leader:
        store.remove_partials()
        found = store.latest_valid(on_skip=lambda step, exc: log(f"skipping checkpoint step {step}: {exc}"))
    step = group.from_leader(found[0] if found else None)
    if step is None:
        return None
    return found[1] if found else store.read(step)


def train_step(
    net: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: LambdaLR,
    batch: tuple[torch.Tensor, torch.Tensor],
    device: torch.device,
    grad_clip: float,
) -> torch.Tensor:
    images, labels = (tensor.to(device, non_blocking=True) for tensor in batch)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        loss = F.cross_entropy(net(images), labels)
    loss.backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(net.parameters(), grad_clip)
    optimizer.step()
    schedule.step()
    return loss.detach()


def write_outputs(model: torch.nn.Module, model_dir: Path, metrics: dict[str, Any]) -> None:
    """The final artefacts SageMaker uploads from SM_MODEL_DIR, each written atomically."""
    model_dir.mkdir(parents=True, exist_ok=True)
    tensors = {name: tensor.detach().to("cpu").contiguous() for name, tensor in model.state_dict().items()}
    _replace_atomically(model_dir / "model.safetensors", lambda path: path.write_bytes(safetensors_bytes(tensors)))
    _replace_atomically(model_dir / "metrics.json", lambda path: path.write_text(json.dumps(metrics, indent=2) + "\n"))


def _replace_atomically(final: Path, write: Callable[[Path], object]) -> None:
    partial_path = final.with_name(f".partial-{final.name}")
    write(partial_path)
    os.replace(partial_path, final)


@dataclass
class Pace:
    """When this attempt last saved and logged, and what its periodic checkpoints cost it."""

    first_step: int
    started: float
    saved_step: int
    saved_at: float
    logged_step: int
    logged_at: float
    blocked_seconds: float = 0.0
    checkpoints: int = 0

    @classmethod
    def starting_at(cls, step: int) -> Pace:
        """The starting step counts as saved: it is either step 0 or the checkpoint just loaded."""
        now = time.monotonic()
        return cls(first_step=step, started=now, saved_step=step, saved_at=now, logged_step=step, logged_at=now)


class Trainer:
    """One process's share of a training job, from resume to final model or preemption."""

    def __init__(
        self, hp: argparse.Namespace, placement: topology.Placement, group: Group, device: torch.device
    ) -> None:
        self.hp = hp
        self.placement = placement
        self.group = group
        self.device = device
        self.global_batch = hp.batch_size * placement.world_size
        self.store = CheckpointStore(hp.checkpoint_dir, hp.keep_checkpoints)
        self.writer = BackgroundWriter(self.store, self._report_saved)
        self.dataset, self.num_classes = build_dataset(hp)
        seed_everything(hp.seed)
        self.model = build_model(hp, self.num_classes).to(device)
        self.optimizer = build_optimizer(self.model, hp)
        self.schedule = build_schedule(self.optimizer, hp)
        self.step = 0
        self.samples_seen = 0
        self.last_loss: float | None = None
        self.resumed_from: int | None = None

    def run(self, stop: StopRequest) -> int:
        resume = find_resume_point(self.store, self.group, self.placement)
        seed_everything(derive_seed(self.hp.seed, _RANK_STREAM, self.placement.rank, resume["step"] if resume else 0))
        if resume is not None:
            self.load_checkpoint(resume)
        self._announce()
        net = self._wrap(self.model)
        stream = self.batch_stream()
        if resume is not None:
            self._restore_rng(resume["rng"])
        del resume
        return self._loop(net, stream, stop)

    def load_checkpoint(self, state: dict[str, Any]) -> None:
        """Weights, optimizer, schedule and position; RNG state is restored later, just before the loop."""
        if state.get("format") != CHECKPOINT_FORMAT:
            raise CorruptCheckpoint(f"checkpoint format {state.get('format')!r}, expected {CHECKPOINT_FORMAT}")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.schedule.load_state_dict(state["scheduler"])
        self.step = state["step"]
        self.samples_seen = state["samples_seen"]
        self.last_loss = state["loss"]
        self.resumed_from = self.step

    def _restore_rng(self, per_rank: list[dict[str, Any]]) -> None:
        """Exact only when the world size is unchanged; otherwise the fresh per-rank seeds stand."""
        if len(per_rank) == self.placement.world_size:
            restore_rng(per_rank[self.placement.rank])
        elif self.placement.is_leader:
            log(
                f"checkpoint was written by {len(per_rank)} processes, now {self.placement.world_size}: RNG streams reseeded"
            )

    def _announce(self) -> None:
        where = self.store.directory
        log(
            f"rank={self.placement.rank} world_size={self.placement.world_size} device={self.device} start_step={self.step}"
        )
        if self.placement.is_leader:
            if self.resumed_from is None:
                log(f"no checkpoint in {where}: starting at step 0")
            else:
                log(f"resumed from checkpoint step {self.resumed_from}")

    def _wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        if self.placement.world_size == 1:
            return model
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=device_ids)

    def batch_stream(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Endless batches for this rank from the current data position."""
        on_cuda = self.device.type == "cuda"
        workers = self.hp.num_workers if self.hp.num_workers is not None else (2 if on_cuda else 0)
        share = RankShare(self.samples_seen, self.hp.batch_size, self.placement.rank, self.placement.world_size)
        return batches(self.dataset, share, workers, on_cuda, derive_seed(self.hp.seed, _LOADER_STREAM))

    def _loop(
        self, net: torch.nn.Module, stream: Iterator[tuple[torch.Tensor, torch.Tensor]], stop: StopRequest
    ) -> int:
        pace = Pace.starting_at(self.step)
        while self.step < self.hp.max_steps:
            stopping, time_due = self.group.agree(stop.requested, self._time_due(pace))
            if stopping:
                return self._stop(pace)
            if (time_due or self._step_due()) and self.step != pace.saved_step:
                self._checkpoint_in_background(pace)
            loss = train_step(net, self.optimizer, self.schedule, next(stream), self.device, self.hp.grad_clip)
            self.step += 1
            self.samples_seen += self.global_batch
            if self.step % self.hp.log_every == 0 or self.step == self.hp.max_steps:
                self._log_progress(loss, pace)
        return self._finish(pace)

    def _time_due(self, pace: Pace) -> bool:
        """Decided by the leader's clock alone; ``Group.agree`` passes the decision to every rank."""
        every = self.hp.checkpoint_every_seconds
        return self.placement.is_leader and every > 0 and time.monotonic() - pace.saved_at >= every

    def _step_due(self) -> bool:
        every = self.hp.checkpoint_every_steps
        return every > 0 and self.step % every == 0

    def _checkpoint_in_background(self, pace: Pace) -> None:
        began = time.monotonic()
        state = self.checkpoint_state()
        if state is not None:
            self.writer.submit(self.step, state)
        pace.saved_at = time.monotonic()
        pace.saved_step = self.step
        pace.blocked_seconds += pace.saved_at - began
        pace.checkpoints += 1

    def _log_progress(self, loss: torch.Tensor, pace: Pace) -> None:
        self.last_loss = self.group.mean(loss)
        now = time.monotonic()
        rate = (self.step - pace.logged_step) * self.global_batch / max(now - pace.logged_at, 1e-9)
        if self.placement.is_leader:
            lr = self.schedule.get_last_lr()[0]
            log(f"step={self.step} loss={self.last_loss:.4f} samples_per_sec={rate:.1f} lr={lr:.3e}")
        pace.logged_at, pace.logged_step = now, self.step

    def _stop(self, pace: Pace) -> int:
        """SIGTERM: make the current step durable and leave; the job is not finished, so no model."""
        self.writer.wait()
        if self.step != pace.saved_step:
            self._save_now()
        if self.placement.is_leader:
            log(f"SIGTERM: state at step {self.step} is checkpointed, exiting")
        return 0

    def _finish(self, pace: Pace) -> int:
        elapsed = time.monotonic() - pace.started
        self.writer.wait()
        if self.step != pace.saved_step:
            self._save_now()
        if self.placement.is_leader:
            trained = self.step - pace.first_step
            metrics = {
                "step": self.step,
                "loss": self.last_loss,
                "samples_per_sec": trained * self.global_batch / elapsed if trained else None,
                "train_seconds": elapsed,
                "checkpoint_blocking_seconds": pace.blocked_seconds,
                "checkpoints_written": pace.checkpoints,
                "resumed_from_step": self.resumed_from,
                "world_size": self.placement.world_size,
                "global_batch_size": self.global_batch,
            }
            write_outputs(self.model, self.hp.model_dir, metrics)
            log(f"training complete at step {self.step}: {self.hp.model_dir / 'model.safetensors'}")
        return 0

    def checkpoint_state(self) -> dict[str, Any] | None:
        """The checkpoint contents on the leader (None elsewhere); every rank must call it together."""
        rng = self.group.gather(capture_rng())
        if not self.placement.is_leader:
            return None
        return snapshot(
            {
                "format": CHECKPOINT_FORMAT,
                "step": self.step,
                "samples_seen": self.samples_seen,
                "loss": self.last_loss,
                "world_size": self.placement.world_size,
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.schedule.state_dict(),
                "rng": rng,
                "hparams": {key: str(value) for key, value in vars(self.hp).items()},
            }
        )

    def _save_now(self) -> None:
        state = self.checkpoint_state()
        if state is not None:
            self._report_saved(self.store.write(self.step, state))

    def _report_saved(self, saved: Saved) -> None:
        log(f"checkpoint saved: step {saved.step} in {saved.seconds:.2f} s ({saved.path.name})")


def run(hp: argparse.Namespace, placement: topology.Placement, stop: StopRequest) -> int:
    """Train as one process of the job; returns the exit status."""
    if hp.threads:
        torch.set_num_threads(hp.threads)
    device = pick_device(placement)
    group = Group.join(placement, device)
    try:
        return Trainer(hp, placement, group, device).run(stop)
    finally:
        group.leave()


def _spawned(local_rank: int, hp: argparse.Namespace, launch: topology.LaunchPlan) -> None:
    stop = StopRequest().install()
    topology.export(launch, local_rank)
    status = run(hp, launch.placement(local_rank), stop)
    if status:
        sys.exit(status)


def spawn_local_processes(hp: argparse.Namespace, launch: topology.LaunchPlan, stop: StopRequest) -> int:
    """One process per local rank; SIGTERM to this parent is passed on so every rank saves and exits."""
    context = torch.multiprocessing.start_processes(
        _spawned, args=(hp, launch), nprocs=len(launch.local_ranks), join=False, start_method="spawn"
    )

    def forward(signum: int, frame: FrameType | None) -> None:
        for process in context.processes:
            if process.is_alive():
                os.kill(process.pid, signum)

    previous = signal.signal(signal.SIGTERM, forward)
    if stop.requested:  # arrived before the children existed
        forward(signal.SIGTERM, None)
    try:
        while not context.join():
            pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def main(argv: Sequence[str] | None = None, stop: StopRequest | None = None) -> int:
    """Entry point. ``stop`` is the StopRequest the script installed for the life of the process;
    in-process callers leave it out and get one installed for the duration of the call."""
    if stop is None:
        with StopRequest().installed() as stop:
            return main(argv, stop)
    hp = hparams.parse(sys.argv[1:] if argv is None else argv, os.environ)
    launch = topology.plan(os.environ, hp.nproc_per_host)
    if len(launch.local_ranks) > 1:
        return spawn_local_processes(hp, launch, stop)
    local_rank = launch.local_ranks[0]
    if launch.world_size > 1:
        topology.export(launch, local_rank)
    return run(hp, launch.placement(local_rank), stop)


if __name__ == "__main__":
    sys.exit(main(stop=StopRequest().install()))
