"""SDK v3 `ModelTrainer` jobs on the whole local stack, through `TrainingQueue.train` and `.submit`.

Each test runs with only what `smq local up` prints (the API URL, the AWS endpoints, region and
dummy keys) in the environment, and with `offline` proving nothing tries to leave the machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest

pytest.importorskip("sagemaker.train", reason="needs the SageMaker Python SDK v3 (make test-sdk3)")

from sagemaker.core.helper.session_helper import Session
from sagemaker.core.training.configs import Compute
from sagemaker.train import ModelTrainer
from smq import TrainingQueue
from smq.local.stack import LocalStack, LocalStackOptions, client_environment

from tests.support.preemption import checkpointed, submit_when

pytestmark = pytest.mark.slow

POOL = "ml.m5.xlarge"
ROLE = "arn:aws:iam::000000000000:role/SageMakerRole"
SCRIPTS = Path(__file__).parent / "scripts"
RESUMED = re.compile(r"resumed from checkpoint step (\d+)")


@contextmanager
def local_stack(workdir: Path, executor: str) -> Iterator[LocalStack]:
    """One instance of the pool: a second job can only run by preempting the first."""
    options = LocalStackOptions(
        capacity={POOL: 1}, executor=executor, workdir=workdir, stop_grace_seconds=30, reconcile_every_seconds=5
    )
    with LocalStack(options) as running, client_environment(running):
        yield running


def make_trainer(stack: LocalStack, hyperparameters: dict[str, Any]) -> ModelTrainer:
    """A trainer as a v3 user writes it; the local stack's bucket stands in for the default one,
    which the SDK would name after an account it asks the real STS for."""
    return ModelTrainer(
        training_image="local/counter:latest",
        role=ROLE,
        compute=Compute(instance_type=POOL, instance_count=1),
        hyperparameters=hyperparameters,
        base_job_name="count",
        sagemaker_session=Session(boto_session=boto3.Session(), default_bucket=stack.bucket),
    )


def counting(steps: int) -> dict[str, Any]:
    """The process executor runs scripts/count.py as SageMaker's script mode would."""
    return {
        "sagemaker_program": "count.py",
        "sagemaker_submit_directory": SCRIPTS.as_uri(),
        "steps": steps,
        "step-seconds": 0.1,
    }


def artifact_exists(s3_uri: str) -> bool:
    bucket, _, key = s3_uri.removeprefix("s3://").partition("/")
    return boto3.client("s3").head_object(Bucket=bucket, Key=key)["ContentLength"] > 0


def test_a_preempted_train_resumes_from_its_checkpoint_and_streams_each_attempts_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], offline: list[str]
) -> None:
    with local_stack(tmp_path / "stack", "process") as stack:
        queue = TrainingQueue()
        urgent = make_trainer(stack, counting(steps=5))

        helper = submit_when(queue, checkpointed(stack), lambda: queue.submit(urgent, priority=10, job_name="urgent"))
        patient = make_trainer(stack, counting(steps=100))

        job = queue.train(patient, job_name="patient", priority=1, poll=1)

        helper.join(timeout=5)
        output = capsys.readouterr().out
        assert re.search(r"attempt 1 of patient (is being preempted|ended: preempted)", output), output
        assert "preempted for urgent" in output
        assert "starting attempt 2 of patient" in output
        resumed = [int(step) for step in RESUMED.findall(output)]
        assert resumed and resumed[0] > 0, output
        assert re.search(r"training complete at step 100\b", output), output
        assert queue.get_job("urgent").state == "completed"
        assert [attempt["outcome"] for attempt in job.attempts] == ["preempted", "completed"]
        latest = patient._latest_training_job
        assert latest is not None and latest.training_job_name == job.attempts[1]["training_job_name"]
        assert latest.training_job_status == "Completed"
        assert artifact_exists(latest.model_artifacts.s3_model_artifacts)
        assert offline == []


def test_train_on_the_synthetic_executor_completes_and_attaches_the_attempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], offline: list[str]
) -> None:
    with local_stack(tmp_path / "stack", "synthetic") as stack:
        trainer = make_trainer(stack, {"smq_synthetic_duration": 1})

        job = TrainingQueue().train(trainer, job_name="quick", poll=0.5)

        output = capsys.readouterr().out
        assert "starting attempt 1 of quick" in output and "quick completed" in output, output
        assert job.state == "completed"
        assert trainer._latest_training_job is not None
        assert trainer._latest_training_job.training_job_name == job.training_job_name
        assert artifact_exists(trainer._latest_training_job.model_artifacts.s3_model_artifacts)
        assert offline == []
