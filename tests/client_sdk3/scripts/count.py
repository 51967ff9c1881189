"""A training script with nothing to install, for the local stack's process executor: it counts
steps, saves a checkpoint after every step, resumes from the last one, and ends on SIGTERM, so a
preempted job continues where it stopped. Like a real trainer it takes a moment to stop, which
also lets a follower polling every second see the job being preempted."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--step-seconds", type=float, default=0.1)
    args = parser.parse_args()
    checkpoint = Path(os.environ.get("SMQ_CHECKPOINT_DIR", "/opt/ml/checkpoints")) / "step.json"
    step = json.loads(checkpoint.read_text())["step"] if checkpoint.exists() else 0
    print(f"resumed from checkpoint step {step}" if step else "no checkpoint: starting at step 0", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: stop(step))
    while step < args.steps:
        time.sleep(args.step_seconds)
        step += 1
        partial = checkpoint.with_suffix(".partial")
        partial.write_text(json.dumps({"step": step}))
        os.replace(partial, checkpoint)
        print(f"checkpoint saved: step {step}", flush=True)
    Path(os.environ["SM_MODEL_DIR"], "model.json").write_text(json.dumps({"steps": step}))
    print(f"training complete at step {step}", flush=True)


def stop(step: int) -> None:
    print(f"stopping at step {step}: its checkpoint is saved", flush=True)
    time.sleep(1.5)
    sys.exit(0)


if __name__ == "__main__":
    main()
