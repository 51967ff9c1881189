"""End to end on the local stack: a training job started outside the queue, wearing a queued job's
tags, changes nothing in the queue and is never stopped by it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack

from tests.e2e.local import synthetic_request, wait_for

ENDED = {"Completed", "Failed", "Stopped"}


def wait_until_ended(sagemaker: Any, name: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    described = sagemaker.describe_training_job(TrainingJobName=name)
    while described["TrainingJobStatus"] not in ENDED:
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} still {described['TrainingJobStatus']} after {timeout} s")
        time.sleep(0.2)
        described = sagemaker.describe_training_job(TrainingJobName=name)
    return described


@pytest.mark.slow
def test_a_job_started_outside_the_queue_with_a_victims_tags_changes_nothing(stack: LocalStack) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")
    sagemaker = stack.boto3_client("sagemaker")
    client.add_job(synthetic_request("victim", duration=300))
    victim = wait_for(client, "victim", {"running"})

    forged = synthetic_request("forged-by-hand", duration=2)
    forged["Tags"] = [{"Key": "smq:job", "Value": "victim"}, {"Key": "smq:attempt", "Value": "1"}]
    sagemaker.create_training_job(**forged)
    assert wait_until_ended(sagemaker, "forged-by-hand")["TrainingJobStatus"] == "Completed", (
        "never stopped by the queue"
    )

    # The forged job's events were published before it showed Completed, and events reach the
    # scheduler in publication order; so once a job submitted now runs (its own InProgress event came
    # later), the scheduler has handled every event of the forged job.
    client.add_job(synthetic_request("barrier", duration=1))
    wait_for(client, "barrier", {"running", "completed"})

    after = client.get_job("victim")
    assert after["state"] == "running"
    assert [(attempt["training_job_name"], attempt["ended_at"]) for attempt in after["attempts"]] == [
        (victim["training_job_name"], None)
    ]
    real = sagemaker.describe_training_job(TrainingJobName=victim["training_job_name"])
    assert real["TrainingJobStatus"] == "InProgress"

    client.cancel_job("victim")
    wait_for(client, "victim", {"cancelled"}, timeout=60)
