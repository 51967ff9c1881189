"""A tiny training loop for the local SageMaker tests: one step per --step-seconds, a checkpoint
after every step, resume from the checkpoint, and a chosen reaction to SIGTERM."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5)
parser.add_argument("--step-seconds", type=float, default=0.05)
parser.add_argument("--on-sigterm", choices=["save", "ignore"], default="save")
parser.add_argument("--fail-at", type=int, default=0)
parser.add_argument("--pid-file", default="")
args = parser.parse_args()

checkpoint = os.path.join(os.environ["SMQ_CHECKPOINT_DIR"], "state.json")
step = 0
if os.path.exists(checkpoint):
    with open(checkpoint) as f:
        step = json.load(f)["step"]
    print(f"resumed from checkpoint step {step}", flush=True)


def save() -> None:
    with open(checkpoint + ".tmp", "w") as f:
        json.dump({"step": step}, f)
    os.replace(checkpoint + ".tmp", checkpoint)


def on_sigterm(signum: int, frame: object) -> None:
    save()
    print(f"caught SIGTERM at step {step}", flush=True)
    sys.exit(0)


if args.on_sigterm == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, on_sigterm)

if args.pid_file:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(args.pid_file, "w") as f:
        json.dump({"main": os.getpid(), "child": child.pid}, f)

print("training started", flush=True)
while step < args.steps:
    time.sleep(args.step_seconds)
    step += 1
    save()
    print(f"step {step}", flush=True)
    if step == args.fail_at:
        print("Traceback (most recent call last):", file=sys.stderr, flush=True)
        print("RuntimeError: loss is NaN", file=sys.stderr, flush=True)
        sys.exit(3)

with open(os.path.join(os.environ["SM_MODEL_DIR"], "model.json"), "w") as f:
    json.dump({"steps": step}, f)
print("training done", flush=True)
