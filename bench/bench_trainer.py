"""What checkpointing costs the reference trainer: vit_tiny_patch16_224 on CPU.

Measures, in one run so every ratio is against a baseline taken minutes earlier on the same
machine:

1. checkpoint save time (the part that blocks training, snapshotting the state; and the atomic
   write with fsync, which runs on a background thread) and load time (read, SHA-256 check,
   deserialise, load into model/optimizer/schedule);
2. ``trainer/train.py`` step time with checkpoints off and at the default interval
   (hparams.DEFAULT_CHECKPOINT_EVERY_SECONDS): the second run goes on until a few steps after
   its first checkpoint, the first as many steps;
3. the time from SIGTERM (sent mid-step) to "checkpoint saved" and to process exit.

Two runs minutes apart on a shared machine differ by a few percent whatever they do, so besides
the plain ratio of their throughputs the cost is also measured within the checkpointing run: the
time the steps that overlapped a checkpoint took beyond the median of the steps around them.
That figure does not depend on what else the machine was doing between the two runs.

Usage: ``.venv/bin/python bench/bench_trainer.py`` (``make bench-trainer``). About 3 minutes on
2 CPU cores with the defaults; ``--help`` for the knobs.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAIN_SCRIPT = REPO / "trainer" / "train.py"
sys.path.insert(0, str(REPO / "trainer"))

import hparams  # noqa: E402
import topology  # noqa: E402
import torch  # noqa: E402
from checkpoint_store import CheckpointStore  # noqa: E402
from train import Group, Trainer, train_step  # noqa: E402

MODEL = "vit_tiny_patch16_224"
WARMUP_STEPS = 2
NEIGHBOURS = 5
_STEP_LINE = re.compile(r"^step=(\d+) loss=\S+ samples_per_sec=([0-9.]+)")
_SAVED_LINE = re.compile(r"^checkpoint saved: step (\d+) ")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=16, help="per step, at --img-size")
    parser.add_argument("--img-size", type=int, default=224)
    parser.add_argument("--num-classes", type=int, default=1000, help="the ImageNet head vit_tiny is defined with")
    parser.add_argument("--repeats", type=int, default=5, help="saves and loads to time")
    parser.add_argument(
        "--margin-seconds", type=float, default=15.0, help="how far past the checkpoint interval each run goes"
    )
    return parser.parse_args()


def trainer_args(args: argparse.Namespace, workdir: Path) -> list[str]:
    return [
        "--model", MODEL, "--img-size", str(args.img_size), "--batch-size", str(args.batch_size),
        "--num-classes", str(args.num_classes), "--checkpoint-dir", str(workdir / "checkpoints"),
        "--model-dir", str(workdir / "model"),
    ]  # fmt: skip


def time_save_and_load(args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    """The trainer's own checkpoint path, in-process, on a state with AdamW moments in it."""
    hp = hparams.parse(trainer_args(args, workdir), {})
    cpu = torch.device("cpu")
    trainer = Trainer(hp, topology.Placement(rank=0, local_rank=0, world_size=1), Group(1, cpu), cpu)
    batch = next(trainer.batch_stream())
    step_seconds = []
    for _ in range(3):
        began = time.perf_counter()
        train_step(trainer.model, trainer.optimizer, trainer.schedule, batch, cpu, hp.grad_clip)
        step_seconds.append(time.perf_counter() - began)
    trainer.step = 3
    store = CheckpointStore(workdir / "timing", keep=2)
    snapshots, writes, loads = [], [], []
    for repeat in range(args.repeats):
        began = time.perf_counter()
        state = trainer.checkpoint_state()
        snapshots.append(time.perf_counter() - began)
        assert state is not None
        writes.append(store.write(repeat, state).seconds)
        began = time.perf_counter()
        trainer.load_checkpoint(store.read(repeat))
        loads.append(time.perf_counter() - began)
    return {
        "checkpoint_mb": store.path_for(args.repeats - 1).stat().st_size / 1e6,
        "snapshot_s": statistics.median(snapshots),
        "write_s": statistics.median(writes),
        "load_s": statistics.median(loads),
        "step_s": statistics.median(step_seconds[1:]),
    }


@dataclass
class Run:
    """One training run, step by step (``--log-every 1``: each line times exactly one step)."""

    batch_size: int
    step_seconds: dict[int, float] = field(default_factory=dict)
    checkpoints: list[set[int]] = field(default_factory=list)
    """For each periodic checkpoint, the steps that ran while it was snapshotted or written."""

    def read(self, line: str) -> None:
        if match := _STEP_LINE.match(line):
            self.step_seconds[int(match.group(1))] = self.batch_size / float(match.group(2))
        elif (match := _SAVED_LINE.match(line)) and self.step_seconds:
            # Saving the state of step S blocks step S+1 for the snapshot; the background write
            # overlaps S+1 and every step logged before "checkpoint saved", and maybe the next one.
            saved = int(match.group(1))
            self.checkpoints.append(set(range(saved + 1, max(self.step_seconds) + 2)))

    @property
    def last_step(self) -> int:
        return max(self.step_seconds, default=0)

    @property
    def steady(self) -> list[float]:
        return [seconds for step, seconds in self.step_seconds.items() if step > WARMUP_STEPS]

    @property
    def mean_step(self) -> float:
        return statistics.fmean(self.steady)

    @property
    def samples_per_sec(self) -> float:
        return self.batch_size * len(self.steady) / sum(self.steady)

    @property
    def periodic(self) -> list[set[int]]:
        """Checkpoints taken while training went on (not the one SIGTERM takes at the end)."""
        overlapped = (steps & self.step_seconds.keys() for steps in self.checkpoints)
        return [steps for steps in overlapped if steps]

    @property
    def overlapping(self) -> list[int]:
        return sorted(step for steps in self.periodic for step in steps)

    @property
    def extra_seconds(self) -> float:
        """Time the overlapping steps took beyond the median of their neighbours.

        Neighbours, not the whole run: a shared machine's load drifts over a minute, and only the
        steps either side of a checkpoint ran under the same conditions it did.
        """
        extra = 0.0
        for steps in self.periodic:
            window = range(min(steps) - NEIGHBOURS, max(steps) + NEIGHBOURS + 1)
            neighbours = [
                self.step_seconds[step]
                for step in window
                if step in self.step_seconds and step > WARMUP_STEPS and step not in steps
            ]
            typical = statistics.median(neighbours)
            extra += sum(self.step_seconds[step] - typical for step in steps)
        return extra


def training_run(
    args: argparse.Namespace, workdir: Path, extra: list[str], enough: Callable[[Run], bool], limit_seconds: float
) -> Run:
    """Train until ``enough`` says so, then stop the trainer the way smq would: SIGTERM.

    Ending on a condition rather than a step count keeps the runs right however fast the machine
    happens to be while they run.
    """
    command = [
        sys.executable, str(TRAIN_SCRIPT), *trainer_args(args, workdir),
        "--max-steps", "1000000", "--log-every", "1", *extra,
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True, env=_clean_env())
    assert process.stdout is not None
    run = Run(args.batch_size)
    deadline = time.monotonic() + limit_seconds
    signalled = False
    for line in process.stdout:
        run.read(line)
        if not signalled and (enough(run) or time.monotonic() > deadline):
            process.send_signal(signal.SIGTERM)
            signalled = True
    if process.wait() != 0:
        raise RuntimeError(f"trainer exited {process.returncode}")
    if not enough(run):
        raise RuntimeError(f"gave up after {limit_seconds:.0f} s: the run did not get far enough")
    return run


def sigterm_latency(args: argparse.Namespace, workdir: Path, step_seconds: float) -> dict[str, float]:
    """Signal halfway through a step, as a preemption would land: the step finishes, then the save."""
    command = [
        sys.executable,
        str(TRAIN_SCRIPT),
        *trainer_args(args, workdir),
        "--max-steps",
        "1000",
        "--log-every",
        "2",
    ]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True, env=_clean_env())
    assert process.stdout is not None
    signalled = saved = 0.0
    for line in process.stdout:
        if signalled == 0.0 and line.startswith("step=4 "):
            time.sleep(step_seconds / 2)
            process.send_signal(signal.SIGTERM)
            signalled = time.perf_counter()
        elif signalled and line.startswith("checkpoint saved:"):
            saved = time.perf_counter()
    status = process.wait()
    exited = time.perf_counter()
    if status != 0 or not saved:
        raise RuntimeError(f"trainer exited {status} without a SIGTERM checkpoint")
    return {"to_saved_s": saved - signalled, "to_exit_s": exited - signalled}


def _clean_env() -> dict[str, str]:
    """No SM_*/torchrun variables from the caller's shell: the runs must be single-process."""
    prefixes = ("SM_", "SMQ_", "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_", "TORCHELASTIC_")
    return {key: value for key, value in os.environ.items() if not key.startswith(prefixes)}


def main() -> None:
    args = parse_args()
    interval = hparams.DEFAULT_CHECKPOINT_EVERY_SECONDS
    print(
        f"{MODEL} on CPU ({os.cpu_count()} cores, {torch.get_num_threads()} torch threads), torch {torch.__version__}"
    )
    print(f"batch {args.batch_size} x {args.img_size}px, {args.num_classes} classes, synthetic data")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as tmp:
        root = Path(tmp)
        timing = time_save_and_load(args, root / "timing")
        print(f"training runs: until {NEIGHBOURS} steps after the first checkpoint (interval {interval:.0f} s)")
        limit = 4 * interval
        default = training_run(
            args,
            root / "default",
            [],
            lambda run: bool(run.checkpoints) and run.last_step >= max(run.checkpoints[0]) + NEIGHBOURS,
            limit,
        )
        baseline = training_run(
            args,
            root / "baseline",
            ["--checkpoint-every-seconds", "0"],
            lambda run: run.last_step >= default.last_step,
            limit,
        )
        latency = sigterm_latency(args, root / "sigterm", timing["step_s"])
    print(f"load average at end: {os.getloadavg()[0]:.2f}")

    base_rate, rate = baseline.samples_per_sec, default.samples_per_sec
    total = sum(default.steady)
    cost = default.extra_seconds / total
    rows = [
        ("checkpoint file", f"{timing['checkpoint_mb']:.1f} MB", ""),
        ("save, blocking (snapshot)", f"{timing['snapshot_s'] * 1000:.0f} ms", f"{timing['snapshot_s'] / timing['step_s']:.3f} x step"),
        ("save, background (write + fsync)", f"{timing['write_s'] * 1000:.0f} ms", f"{timing['write_s'] / timing['step_s']:.3f} x step"),
        ("load (read + verify + restore)", f"{timing['load_s'] * 1000:.0f} ms", f"{timing['load_s'] / timing['step_s']:.3f} x step"),
        ("mean step, no checkpoints", f"{baseline.mean_step * 1000:.0f} ms", "baseline"),
        (f"mean step, checkpoint every {interval:.0f} s", f"{default.mean_step * 1000:.0f} ms", f"{default.mean_step / baseline.mean_step:.4f} x baseline"),
        ("throughput, no checkpoints", f"{base_rate:.2f} samples/s", "baseline"),
        (f"throughput, checkpoint every {interval:.0f} s", f"{rate:.2f} samples/s", f"{rate / base_rate:.4f} x baseline"),
        ("checkpoints in that run", str(len(default.periodic)), f"steps overlapping them: {default.overlapping}"),
        ("  their extra time within the run", f"{default.extra_seconds * 1000:.0f} ms", f"{cost * 100:.2f} % of {total:.0f} s, {len(default.steady)} steps"),
        ("SIGTERM to checkpoint saved", f"{latency['to_saved_s']:.2f} s", "signal mid-step: rest of the step + save"),
        ("SIGTERM to process exit", f"{latency['to_exit_s']:.2f} s", ""),
    ]  # fmt: skip
    width = max(len(name) for name, _, _ in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>17}  {note}")
    print(
        f"checkpointing every {interval:.0f} s costs {cost * 100:.2f} % of training time within the run "
        f"(throughput ratio between the two runs: {(1 - rate / base_rate) * 100:+.2f} %); target < 2 %"
    )


if __name__ == "__main__":
    main()
