"""The client on the whole local stack: real estimators, the real trainer, the README examples.

Each test runs with only what `smq local up` prints (the API URL, the AWS endpoints, region and
dummy keys) in the environment, and with `offline` proving nothing tries to leave the machine.
"""

from __future__ import annotations

import re
import runpy
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from smq import JobNotFound, QueueTrainingJobSession, TrainingQueue
from smq.local.stack import REPOSITORY, LocalStack, LocalStackOptions, client_environment
from smq.queue import training_request

pytestmark = pytest.mark.slow

EXAMPLES = REPOSITORY / "examples" / "client"
POOL = "ml.m5.xlarge"
ROLE = "arn:aws:iam::000000000000:role/SageMakerRole"
TINY_VIT = {
    "img-size": 32,
    "patch-size": 8,
    "embed-dim": 64,
    "depth": 2,
    "num-heads": 2,
    "batch-size": 16,
    "threads": 1,
}
PATIENT_STEPS = 2000
"""About 15 s of training on one core: long enough to be preempted after its first checkpoint."""
RESUMED = re.compile(r"resumed from checkpoint step (\d+)")


@contextmanager
def local_stack(workdir: Path, monkeypatch: pytest.MonkeyPatch, executor: str, capacity: int) -> Iterator[LocalStack]:
    """The stack, the client environment it prints, and the repository root as the working
    directory (the examples' `source_dir="trainer"`)."""
    options = LocalStackOptions(
        capacity={POOL: capacity},
        executor=executor,
        workdir=workdir,
        stop_grace_seconds=30,
        reconcile_every_seconds=5,
    )
    monkeypatch.chdir(REPOSITORY)
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    with LocalStack(options) as running, client_environment(running):
        yield running


@pytest.fixture
def process_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    """Real trainer processes, one instance: a second job can only run by preempting the first."""
    with local_stack(tmp_path / "stack", monkeypatch, "process", 1) as stack:
        yield stack


@pytest.fixture
def synthetic_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    with local_stack(tmp_path / "stack", monkeypatch, "synthetic", 2) as stack:
        yield stack


def model_archive_exists(model_data: str) -> bool:
    bucket, _, key = model_data.removeprefix("s3://").partition("/")
    s3 = boto3.client("s3")
    return s3.head_object(Bucket=bucket, Key=key)["ContentLength"] > 0


def test_the_readme_estimator_example_trains_through_the_queue(
    process_stack: LocalStack, capsys: pytest.CaptureFixture[str], offline: list[str]
) -> None:
    namespace = runpy.run_path(str(EXAMPLES / "train_with_queue.py"))

    estimator = namespace["estimator"]
    output = capsys.readouterr().out
    assert "starting attempt 1 of" in output
    assert "no checkpoint in" in output
    assert re.search(r"training complete at step 60\b", output), output
    assert estimator.model_data.endswith("/output/model.tar.gz")
    assert model_archive_exists(estimator.model_data)
    assert estimator.latest_training_job.describe()["TrainingJobStatus"] == "Completed"
    assert offline == []


def test_a_preempted_fit_resumes_from_its_checkpoint_and_completes(
    process_stack: LocalStack, capsys: pytest.CaptureFixture[str], offline: list[str]
) -> None:
    session = QueueTrainingJobSession(poll_interval=1)

    def estimator(max_steps: int, priority: int) -> Any:
        from sagemaker.pytorch import PyTorch

        return PyTorch(
            entry_point="train.py",
            source_dir="trainer",
            role=ROLE,
            framework_version="2.3",
            py_version="py311",
            instance_type=POOL,
            instance_count=1,
            hyperparameters={**TINY_VIT, "max-steps": max_steps, "checkpoint-every-steps": 20, "log-every": 100},
            tags=[{"Key": "priority", "Value": str(priority)}],
            sagemaker_session=session,
        )

    urgent = training_request(estimator(max_steps=20, priority=10), job_name="urgent")
    queue = TrainingQueue()
    submitted = threading.Event()

    def preempt_once_checkpointed() -> None:
        """The urgent job arrives once the patient one has saved a checkpoint."""
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                job = queue.get_job("patient")
            except JobNotFound:  # fit() has not submitted it yet
                job = None
            logs = process_stack.training_logs(job.training_job_name) if job and job.training_job_name else ""
            if "checkpoint saved: step" in logs:
                queue.submit(urgent)
                submitted.set()
                return
            time.sleep(0.5)

    helper = threading.Thread(target=preempt_once_checkpointed, daemon=True)
    helper.start()
    patient = estimator(max_steps=PATIENT_STEPS, priority=1)

    patient.fit(job_name="patient")

    helper.join(timeout=5)
    output = capsys.readouterr().out
    assert submitted.is_set()
    assert "attempt 1 of patient is being preempted: preempted for urgent" in output
    assert "starting attempt 2 of patient" in output
    resumed = [int(step) for step in RESUMED.findall(output)]
    assert resumed and resumed[0] > 0, output
    assert re.search(rf"training complete at step {PATIENT_STEPS}\b", output)
    assert queue.get_job("urgent").state == "completed"
    attempts = queue.get_job("patient").attempts
    assert [attempt["outcome"] for attempt in attempts] == ["preempted", "completed"]
    assert patient.model_data.endswith(f"{attempts[1]['training_job_name']}/output/model.tar.gz")
    assert model_archive_exists(patient.model_data)
    assert offline == []


def test_the_readme_python_api_example_runs(synthetic_stack: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / "queue_api.py"))

    output = capsys.readouterr().out
    assert "sweep-a pending position 1" in output
    assert re.search(r"sweep-b\s+\w+\s+priority 7", output)
    assert re.search(r"sweep-b completed \['sweep-b-[0-9a-f]{12}-1'\]", output), output
    assert TrainingQueue().get_job("sweep-a").state == "cancelled"
