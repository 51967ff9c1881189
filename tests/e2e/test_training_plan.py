"""End to end on the local stack: a training plan's pool starts nothing outside its window. A job that
names the plan (`ResourceConfig.TrainingPlanArn`) waits with the window's reason until the window
opens (a few seconds after the stack is up), then starts, and the request SageMaker received names
the plan. The configuration document is loaded as `smq local up --config FILE.json` loads it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, synthetic_request, wait_for

ARN = "arn:aws:sagemaker:us-east-1:000000000000:training-plan/local-plan"
OPENS_AFTER = timedelta(seconds=30)
"""From the moment the stack starts coming up: it is up, and the job waits, well before."""


@pytest.fixture(scope="module")
def opens() -> datetime:
    return (datetime.now(UTC) + OPENS_AFTER).replace(microsecond=0)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, opens: datetime) -> Iterator[LocalStack]:
    window = {"start": opens.isoformat(), "end": (opens + timedelta(hours=2)).isoformat()}
    config = {
        "pools": {POOL: 1},
        "training_plans": {"local-plan": {"arn": ARN, "instance_type": POOL, "instances": 1, "windows": [window]}},
    }
    options = LocalStackOptions(
        config=config, executor="synthetic", workdir=tmp_path_factory.mktemp("plan"), reconcile_every_seconds=2
    )
    with LocalStack(options) as running:
        yield running


def test_a_plan_pool_starts_nothing_outside_its_window(stack: LocalStack, opens: datetime) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")
    request = synthetic_request("planned", duration=2)
    request["ResourceConfig"]["TrainingPlanArn"] = ARN
    client.add_job(request)
    expected = f"training plan local-plan: next window opens {opens.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    deadline = datetime.now(UTC) + timedelta(seconds=20)
    job = client.get_job("planned")
    while job["reason"] != expected and datetime.now(UTC) < min(deadline, opens):
        time.sleep(0.2)
        job = client.get_job("planned")
    assert (job["state"], job["reason"], job["pool"]) == ("pending", expected, "plan:local-plan")

    job = wait_for(client, "planned", {"starting", "running", "completed"}, timeout=OPENS_AFTER.total_seconds() + 30)
    assert datetime.now(UTC) >= opens
    described = stack.boto3_client("sagemaker").describe_training_job(TrainingJobName=job["training_job_name"])
    assert described["ResourceConfig"]["TrainingPlanArn"] == ARN
    assert described["ResourceConfig"]["InstanceType"] == POOL
