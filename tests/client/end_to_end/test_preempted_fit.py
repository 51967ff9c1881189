"""A preempted SDK v2 `fit()` on the whole local stack resumes from its checkpoint and completes."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from smq import TrainingQueue
from smq.local.stack import LocalStack
from smq.queue import training_request

from tests.client.end_to_end.support import POOL, model_archive_exists
from tests.support.preemption import checkpointed, submit_when

pytestmark = pytest.mark.slow

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


def test_a_preempted_fit_resumes_from_its_checkpoint_and_completes(
    process_stack: LocalStack, capsys: pytest.CaptureFixture[str], offline: list[str]
) -> None:
    from smq import QueueTrainingJobSession  # the SageMaker SDK, imported only by the worker that runs this

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

    def submit_urgent() -> None:
        queue.submit(urgent)
        submitted.set()

    helper = submit_when(queue, checkpointed(process_stack), submit_urgent)
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
