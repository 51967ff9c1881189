"""End to end on the local stack with real processes: a spot job interrupted past the limit goes
back through the queue on demand and resumes from its checkpoint; an infrastructure failure is
retried and a failure of the training code is not. The local SageMaker service reports the
interruptions and failures the way SageMaker does (events and DescribeTrainingJob)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, process_request, upload_source, wait_for

SCRIPTS = Path(__file__).parents[1] / "local_sagemaker" / "scripts"
"""steps.py: one step per --step-seconds, a checkpoint after each, resumed from the checkpoint."""
RESUMED = re.compile(r"resumed from checkpoint step (\d+)")
LIMIT = 1
"""The stack's policy (loaded into SSM as `smq local up --policy` does): two interruptions fall back."""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        capacity={POOL: 2},
        executor="process",
        workdir=tmp_path_factory.mktemp("governance-stack"),
        stop_grace_seconds=3.0,
        reconcile_every_seconds=5,
        policy={"spot_interruption_limit": LIMIT},
    )
    with LocalStack(options) as running:
        yield running


@pytest.fixture(scope="module")
def steps_source(stack: LocalStack) -> str:
    return upload_source(stack, SCRIPTS, "code/steps.tar.gz")


@pytest.fixture
def client(stack: LocalStack) -> SmqApiClient:
    return SmqApiClient(stack.api_url, region="us-east-1")


def steps_job(name: str, source: str, **hyperparameters: Any) -> dict[str, Any]:
    return process_request(name, priority=0, source_uri=source, program="steps.py", hyperparameters=hyperparameters)


def wait_until(what: str, check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)
    return found


def resumed_steps(stack: LocalStack, training_job: str) -> list[int]:
    return [int(step) for step in RESUMED.findall(stack.training_logs(training_job))]


def test_a_spot_job_interrupted_past_the_limit_resumes_on_demand_from_its_checkpoint(
    stack: LocalStack, client: SmqApiClient, steps_source: str
) -> None:
    request = steps_job("spot-fallback", steps_source, steps=60, **{"step-seconds": 0.1})
    request["EnableManagedSpotTraining"] = True
    request["StoppingCondition"] = {"MaxRuntimeInSeconds": 600, "MaxWaitTimeInSeconds": 1200}
    client.add_job(request)
    spot = wait_for(client, "spot-fallback", {"running"})["training_job_name"]
    sagemaker = stack.boto3_client("sagemaker")
    wait_until("a first checkpoint", lambda: "step 3" in stack.training_logs(spot))

    for _ in range(LIMIT + 1):
        wait_until(
            "training again",
            lambda: sagemaker.describe_training_job(TrainingJobName=spot)["SecondaryStatus"] == "Training",
        )
        stack.inject(spot, "interrupt")

    job = wait_for(client, "spot-fallback", {"completed", "failed", "cancelled"}, timeout=120)
    assert job["state"] == "completed", job
    first, second = job["attempts"]
    assert first["outcome"] == "spot-fallback"
    assert f"interrupted {LIMIT + 1} times (limit {LIMIT})" in first["reason"]
    assert job["history"][-1]["what"] == first["reason"]
    spot_attempt = sagemaker.describe_training_job(TrainingJobName=spot)
    on_demand = sagemaker.describe_training_job(TrainingJobName=second["training_job_name"])
    assert spot_attempt["TrainingJobStatus"] == "Stopped"
    assert on_demand["EnableManagedSpotTraining"] is False
    assert "MaxWaitTimeInSeconds" not in on_demand["StoppingCondition"]
    assert on_demand["CheckpointConfig"] == spot_attempt["CheckpointConfig"]
    assert on_demand["HyperParameters"] == spot_attempt["HyperParameters"]
    resumed = resumed_steps(stack, second["training_job_name"])
    assert resumed and resumed[0] > 0, "the on-demand attempt resumes from the spot attempts' checkpoint"


def test_an_infrastructure_failure_is_retried_and_resumes(
    stack: LocalStack, client: SmqApiClient, steps_source: str
) -> None:
    client.add_job(steps_job("infra-failure", steps_source, steps=40, **{"step-seconds": 0.1}))
    first = wait_for(client, "infra-failure", {"running"})["training_job_name"]
    wait_until("a first checkpoint", lambda: "step 3" in stack.training_logs(first))

    stack.inject(first, "fail")

    job = wait_for(client, "infra-failure", {"completed", "failed", "cancelled"}, timeout=90)
    assert job["state"] == "completed", job
    retried, final = job["attempts"]
    assert retried["outcome"] == "infrastructure-failure"
    assert retried["reason"].startswith("InternalServerError")
    assert "retrying as attempt 2" in retried["reason"]
    assert final["outcome"] == "completed"
    resumed = resumed_steps(stack, final["training_job_name"])
    assert resumed and resumed[0] > 0


def test_a_failure_of_the_training_code_is_not_retried(
    stack: LocalStack, client: SmqApiClient, steps_source: str
) -> None:
    client.add_job(steps_job("user-failure", steps_source, steps=10, **{"fail-at": 2}))

    job = wait_for(client, "user-failure", {"completed", "failed", "cancelled"}, timeout=60)

    assert job["state"] == "failed" and len(job["attempts"]) == 1
    assert job["reason"].startswith("AlgorithmError")
    assert "not retried (user code or request)" in job["reason"]
