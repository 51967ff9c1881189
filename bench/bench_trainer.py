"""What checkpointing costs the reference trainer: vit_tiny_patch16_224 on CPU.

Measures, in one run so every ratio is against a baseline taken minutes earlier on the same
machine:

1. checkpoint save time (the part that blocks training: snapshotting the state; and the whole
   atomic write with fsync, which runs on a background thread) and load time (read, SHA-256
   check, deserialise, load into model/optimizer/schedule);
2. training throughput of ``trainer/train.py`` with checkpoints off and with the default interval
   (hparams.DEFAULT_CHECKPOINT_EVERY_SECONDS), each run long enough to cross that interval;
3. the time from SIGTERM to "checkpoint saved" and to process exit.

Usage: ``.venv/bin/python bench/bench_trainer.py`` (``make bench-trainer``). About 4 minutes on
2 CPU cores with the defaults; ``--help`` for the knobs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
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


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=16, help="per step; 224x224 images")
    parser.add_argument("--img-size", type=int, default=224)
    parser.add_argument("--num-classes", type=int, default=1000, help="the ImageNet head vit_tiny is defined with")
    parser.add_argument("--repeats", type=int, default=5, help="saves and loads to time")
    parser.add_argument(
        "--margin-seconds", type=float, default=15.0, help="how far past the checkpoint interval each throughput run goes"
    )
    return parser.parse_args()


def trainer_args(args: argparse.Namespace, workdir: Path) -> list[str]:
    return [
        "--model", MODEL, "--img-size", str(args.img_size), "--batch-size", str(args.batch_size),
        "--num-classes", str(args.num_classes), "--checkpoint-dir", str(workdir / "checkpoints"),
        "--model-dir", str(workdir / "model"),
    ]  # fmt: skip


def time_save_and_load(args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    hp = hparams.parse(trainer_args(args, workdir), {})
    trainer = Trainer(hp, topology.Placement(rank=0, local_rank=0, world_size=1), Group(1, torch.device("cpu")), torch.device("cpu"))
    batch = next(trainer.batch_stream())
    step_seconds = []
    for _ in range(3):  # AdamW moments exist only after a step; the later steps time the model
        began = time.perf_counter()
        train_step(trainer.model, trainer.optimizer, trainer.schedule, batch, torch.device("cpu"), hp.grad_clip)
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


def throughput(args: argparse.Namespace, workdir: Path, steps: int, extra: list[str]) -> dict[str, float]:
    command = [sys.executable, str(TRAIN_SCRIPT), *trainer_args(args, workdir), "--max-steps", str(steps), *extra]
    subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL, env=_clean_env())
    return json.loads((workdir / "model" / "metrics.json").read_text())


def sigterm_latency(args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    command = [sys.executable, str(TRAIN_SCRIPT), *trainer_args(args, workdir), "--max-steps", "1000", "--log-every", "2"]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True, env=_clean_env())
    assert process.stdout is not None
    signalled = saved = 0.0
    for line in process.stdout:
        if signalled == 0.0 and line.startswith("step=4 "):
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
    print(f"{MODEL} on CPU, batch {args.batch_size} x {args.img_size}px, {torch.get_num_threads()} torch threads, torch {torch.__version__}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as tmp:
        root = Path(tmp)
        timing = time_save_and_load(args, root / "timing")
        steps = math.ceil((interval + args.margin_seconds) / timing["step_s"])
        print(f"throughput runs: {steps} steps each (~{steps * timing['step_s']:.0f} s, checkpoint interval {interval:.0f} s)")
        baseline = throughput(args, root / "baseline", steps, ["--checkpoint-every-seconds", "0"])
        default = throughput(args, root / "default", steps, [])
        latency = sigterm_latency(args, root / "sigterm")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")

    base_rate, rate = baseline["samples_per_sec"], default["samples_per_sec"]
    blocking_share = default["checkpoint_blocking_seconds"] / default["train_seconds"]
    rows = [
        ("checkpoint size", f"{timing['checkpoint_mb']:.1f} MB", ""),
        ("save: blocking snapshot", f"{timing['snapshot_s'] * 1000:.0f} ms", f"{timing['snapshot_s'] / timing['step_s']:.3f} x step"),
        ("save: atomic write + fsync (background)", f"{timing['write_s'] * 1000:.0f} ms", f"{timing['write_s'] / timing['step_s']:.3f} x step"),
        ("load: read + verify + restore", f"{timing['load_s'] * 1000:.0f} ms", f"{timing['load_s'] / timing['step_s']:.3f} x step"),
        ("step time, no checkpoints", f"{args.batch_size / base_rate * 1000:.0f} ms", "baseline"),
        (f"step time, checkpoint every {interval:.0f} s", f"{args.batch_size / rate * 1000:.0f} ms", f"{base_rate / rate:.4f} x baseline"),
        ("throughput, no checkpoints", f"{base_rate:.2f} samples/s", "1.0000"),
        (f"throughput, checkpoint every {interval:.0f} s", f"{rate:.2f} samples/s", f"{rate / base_rate:.4f} x baseline"),
        ("checkpoints during that run", f"{default['checkpoints_written']}", f"{default['checkpoint_blocking_seconds'] * 1000:.0f} ms blocked in total"),
        ("training time blocked by checkpoints", f"{blocking_share * 100:.2f} %", "target < 2 %"),
        ("SIGTERM to checkpoint saved", f"{latency['to_saved_s']:.2f} s", "includes finishing the current step"),
        ("SIGTERM to process exit", f"{latency['to_exit_s']:.2f} s", ""),
    ]
    width = max(len(name) for name, _, _ in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>18}  {note}")
    print(f"throughput cost of checkpointing at the default interval: {(1 - rate / base_rate) * 100:.2f} % (target < 2 %)")


if __name__ == "__main__":
    main()
