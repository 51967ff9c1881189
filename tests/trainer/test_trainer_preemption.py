"""A real SIGTERM mid-run, the way SageMaker and smq's local stack stop a job, then a restart.

The trainer runs as a subprocess configured only through the variables a SageMaker container
sets, and is signalled after it has logged progress; checkpoints are otherwise disabled, so the
only checkpoint there is to resume from is the one SIGTERM produced.
"""

from __future__ import annotations

import json
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from trainer_support import TINY, TRAIN_SCRIPT, LiveProcess, checkpoint_store, clean_env, file_bytes, run_to_completion

pytestmark = pytest.mark.slow

MAX_STEPS = 400
SAGEMAKER_STOP_GRACE_SECONDS = 120
"""SageMaker sends SIGKILL this long after SIGTERM: the trainer must have exited by then."""
SIGNAL_AFTER_STEP = 40
ARGS = [
    *TINY, "--max-steps", str(MAX_STEPS), "--log-every", "10", "--drop-path", "0.1",
    "--checkpoint-every-seconds", "0", "--checkpoint-every-steps", "0",
]  # fmt: skip


def sagemaker_env(root: Path) -> dict[str, str]:
    return clean_env(
        SMQ_CHECKPOINT_DIR=str(root / "checkpoints"),
        SM_MODEL_DIR=str(root / "model"),
        SM_HOSTS='["algo-1"]',
        SM_CURRENT_HOST="algo-1",
        SM_NUM_GPUS="0",
    )


@dataclass(frozen=True)
class Preempted:
    status: int
    output: str
    checkpoint_steps: list[int]
    stopped_at: int
    resumed_output: str
    model: bytes
    metrics: dict


@pytest.fixture(scope="module")
def reference_model(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    root = tmp_path_factory.mktemp("uninterrupted")
    run_to_completion([sys.executable, str(TRAIN_SCRIPT), *ARGS], sagemaker_env(root))
    return file_bytes(root / "model" / "model.safetensors")


@pytest.fixture(scope="module")
def preempted(tmp_path_factory: pytest.TempPathFactory) -> Preempted:
    root = tmp_path_factory.mktemp("preempted")
    env = sagemaker_env(root)
    live = LiveProcess([sys.executable, str(TRAIN_SCRIPT), *ARGS], env)
    try:
        live.wait_for(rf"^step={SIGNAL_AFTER_STEP} loss=", timeout=120)
        live.process.send_signal(signal.SIGTERM)
        live.wait_for(r"^SIGTERM: ", timeout=SAGEMAKER_STOP_GRACE_SECONDS)
        live.process.send_signal(signal.SIGTERM)  # a supervisor repeating itself while the trainer exits
        status, output = live.finish(timeout=SAGEMAKER_STOP_GRACE_SECONDS)
    finally:
        live.kill()
    checkpoint_steps = checkpoint_store.CheckpointStore(root / "checkpoints", keep=1).steps()
    stopped = re.search(r"^SIGTERM: state at step (\d+) is checkpointed, exiting$", output, re.MULTILINE)
    assert stopped, output
    assert not (root / "model" / "model.safetensors").exists(), "a preempted run must not publish a model"

    resumed_output = run_to_completion([sys.executable, str(TRAIN_SCRIPT), *ARGS], env)
    return Preempted(
        status=status,
        output=output,
        checkpoint_steps=checkpoint_steps,
        stopped_at=int(stopped.group(1)),
        resumed_output=resumed_output,
        model=file_bytes(root / "model" / "model.safetensors"),
        metrics=json.loads((root / "model" / "metrics.json").read_text()),
    )


def test_sigterm_saves_a_checkpoint_and_exits_zero_within_the_stop_grace(preempted: Preempted) -> None:
    assert preempted.status == 0, preempted.output
    assert SIGNAL_AFTER_STEP <= preempted.stopped_at < MAX_STEPS, "the signal must land mid-run"
    assert preempted.checkpoint_steps == [preempted.stopped_at]


def test_restart_resumes_from_the_sigterm_checkpoint(preempted: Preempted) -> None:
    lines = preempted.resumed_output.splitlines()

    assert f"resumed from checkpoint step {preempted.stopped_at}" in lines
    first_progress = next(line for line in lines if line.startswith("step="))
    assert int(first_progress.split()[0].removeprefix("step=")) > preempted.stopped_at


def test_interrupted_and_resumed_model_is_bitwise_identical(preempted: Preempted, reference_model: bytes) -> None:
    assert preempted.model == reference_model


def test_resumed_metrics_say_where_the_attempt_started(preempted: Preempted) -> None:
    assert preempted.metrics["resumed_from_step"] == preempted.stopped_at
    assert preempted.metrics["step"] == MAX_STEPS
