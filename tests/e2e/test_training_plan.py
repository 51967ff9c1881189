"""End to end on the local stack: a training plan's pool starts nothing outside its window. A job that
names the plan (`ResourceConfig.TrainingPlanArn`) waits with the window's reason; when the operator
moves the window to open a few seconds from now (the configuration document in SSM, re-read within
a second here), it starts then, and the request SageMaker received names the plan."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, rereading_stack, synthetic_request, wait_for, write_config

ARN = "arn:aws:sagemaker:us-east-1:000000000000:training-plan/local-plan"
LATER = datetime(2030, 1, 1, tzinfo=UTC)
"""The window the stack starts with: far off, so the job waits for it."""
SOON = timedelta(seconds=4)
"""How long after the job was seen waiting the moved window opens."""


def config(opens: datetime) -> dict[str, Any]:
    window = {"start": opens.isoformat(), "end": (opens + timedelta(hours=2)).isoformat()}
    return {
        "pools": {POOL: 1},
        "training_plans": {"local-plan": {"arn": ARN, "instance_type": POOL, "instances": 1, "windows": [window]}},
    }


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        config=config(LATER), executor="synthetic", workdir=tmp_path_factory.mktemp("plan"), reconcile_every_seconds=1
    )
    with rereading_stack(options) as running:
        yield running


def test_a_plan_pool_starts_nothing_outside_its_window(stack: LocalStack) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")
    request = synthetic_request("planned", duration=2)
    request["ResourceConfig"]["TrainingPlanArn"] = ARN
    client.add_job(request)
    expected = "training plan local-plan: next window opens 2030-01-01T00:00:00Z"
    deadline = time.monotonic() + 30
    job = client.get_job("planned")
    while job["reason"] != expected and time.monotonic() < deadline:
        time.sleep(0.2)
        job = client.get_job("planned")
    assert (job["state"], job["reason"], job["pool"]) == ("pending", expected, "plan:local-plan")

    opens = (datetime.now(UTC) + SOON).replace(microsecond=0) + timedelta(seconds=1)
    write_config(stack, config(opens))
    job = wait_for(client, "planned", {"starting", "running", "completed"}, timeout=30)
    assert datetime.now(UTC) >= opens, "started before its window opened"
    described = stack.boto3_client("sagemaker").describe_training_job(TrainingJobName=job["training_job_name"])
    assert described["ResourceConfig"]["TrainingPlanArn"] == ARN
    assert described["ResourceConfig"]["InstanceType"] == POOL
