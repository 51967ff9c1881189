"""Two CPU processes with DDP over gloo: stopped by SIGTERM, restarted, and still exact.

Two launchers are covered: ``torchrun`` (SageMaker's torch_distributed, or by hand) and the
trainer's own per-host spawn driven by SM_HOSTS / --nproc-per-host (SageMaker's default launch).
Both must produce the same model as an uninterrupted torchrun run.
"""

from __future__ import annotations

import re
import signal
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from trainer_support import (
    TINY,
    TORCHRUN,
    TRAIN_SCRIPT,
    LiveProcess,
    clean_env,
    file_bytes,
    free_port,
    run_to_completion,
)

pytestmark = pytest.mark.slow

MAX_STEPS = 150
SIGNAL_AFTER_STEP = 30
ARGS = [
    *TINY, "--max-steps", str(MAX_STEPS), "--log-every", "10", "--drop-path", "0.1",
    "--checkpoint-every-steps", "20", "--checkpoint-every-seconds", "0",
]  # fmt: skip


def torchrun_command() -> list[str]:
    return [str(TORCHRUN), "--standalone", "--nproc-per-node", "2", str(TRAIN_SCRIPT), *ARGS]


def spawn_command() -> list[str]:
    return [sys.executable, str(TRAIN_SCRIPT), *ARGS, "--nproc-per-host", "2"]


def job_env(root: Path, port: int) -> dict[str, str]:
    return clean_env(
        SMQ_CHECKPOINT_DIR=str(root / "checkpoints"),
        SM_MODEL_DIR=str(root / "model"),
        SM_HOSTS='["algo-1"]',
        SM_CURRENT_HOST="algo-1",
        SM_NUM_GPUS="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )


@dataclass(frozen=True)
class Resumed:
    stopped_output: str
    stopped_at: int
    resumed_output: str
    model: bytes


def interrupt_and_resume(root: Path, command: list[str]) -> Resumed:
    env = job_env(root, free_port())
    live = LiveProcess(command, env)
    try:
        live.wait_for(rf"^step={SIGNAL_AFTER_STEP} loss=", timeout=180)
        live.process.send_signal(signal.SIGTERM)
        _, stopped_output = live.finish(timeout=90)
    finally:
        live.kill()
    stopped = re.search(r"^SIGTERM: state at step (\d+) is checkpointed, exiting$", stopped_output, re.MULTILINE)
    assert stopped, stopped_output
    assert not (root / "model" / "model.safetensors").exists()
    env = job_env(root, free_port())
    resumed_output = run_to_completion(command, env, timeout=180)
    return Resumed(
        stopped_output=stopped_output,
        stopped_at=int(stopped.group(1)),
        resumed_output=resumed_output,
        model=file_bytes(root / "model" / "model.safetensors"),
    )


@pytest.fixture(scope="module")
def reference_model(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    root = tmp_path_factory.mktemp("ddp-uninterrupted")
    run_to_completion(torchrun_command(), job_env(root, free_port()), timeout=180)
    return file_bytes(root / "model" / "model.safetensors")


@pytest.fixture(scope="module")
def torchrun_job(tmp_path_factory: pytest.TempPathFactory) -> Resumed:
    return interrupt_and_resume(tmp_path_factory.mktemp("ddp-torchrun"), torchrun_command())


@pytest.fixture(scope="module")
def spawned_job(tmp_path_factory: pytest.TempPathFactory) -> Resumed:
    return interrupt_and_resume(tmp_path_factory.mktemp("ddp-spawn"), spawn_command())


def start_steps(output: str) -> dict[int, int]:
    return {
        int(rank): int(step)
        for rank, step in re.findall(r"^rank=(\d+) world_size=2 .* start_step=(\d+)$", output, re.MULTILINE)
    }


@pytest.mark.parametrize("job", ["torchrun_job", "spawned_job"])
def test_every_rank_resumes_from_the_sigterm_step(job: str, request: pytest.FixtureRequest) -> None:
    resumed: Resumed = request.getfixturevalue(job)

    assert SIGNAL_AFTER_STEP <= resumed.stopped_at < MAX_STEPS
    assert start_steps(resumed.resumed_output) == {0: resumed.stopped_at, 1: resumed.stopped_at}
    assert resumed.resumed_output.splitlines().count(f"resumed from checkpoint step {resumed.stopped_at}") == 1


@pytest.mark.parametrize("job", ["torchrun_job", "spawned_job"])
def test_interrupted_ddp_run_is_bitwise_identical(
    job: str, request: pytest.FixtureRequest, reference_model: bytes
) -> None:
    resumed: Resumed = request.getfixturevalue(job)

    assert resumed.model == reference_model


def test_only_the_leader_writes_and_logs_checkpoints(torchrun_job: Resumed) -> None:
    saved = re.findall(
        r"^checkpoint saved: step (\d+) ",
        torchrun_job.stopped_output + "\n" + torchrun_job.resumed_output,
        re.MULTILINE,
    )
    counts = Counter(int(step) for step in saved)

    assert counts[torchrun_job.stopped_at] == 1
    assert all(count == 1 for count in counts.values()), counts
    assert {20, MAX_STEPS} <= set(counts)
