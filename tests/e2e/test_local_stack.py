"""End to end on the local stack: the real handlers, store and event flow, synthetic training jobs."""

from __future__ import annotations

from datetime import datetime

import pytest
from smq import JobConflict, SmqApiClient
from smq.local.stack import LocalStack

from tests.e2e.local import POOL, synthetic_request, wait_for

FINISHED = {"completed", "failed", "cancelled"}


@pytest.fixture
def client(stack: LocalStack) -> SmqApiClient:
    return SmqApiClient(stack.api_url, region="us-east-1")


def started_at(job: dict, number: int) -> datetime:
    return datetime.fromisoformat(job["attempts"][number - 1]["started_at"])


@pytest.mark.slow
def test_seed_scenario(stack: LocalStack, client: SmqApiClient) -> None:
    client.add_job(synthetic_request("seed-job1", priority=1, duration=20))
    client.add_job(synthetic_request("seed-job2", priority=2, duration=15))
    wait_for(client, "seed-job1", {"running"})
    wait_for(client, "seed-job2", {"running"})
    client.add_job(synthetic_request("seed-job3", priority=1, duration=2))
    assert client.get_job("seed-job3")["state"] == "pending"

    client.add_job(synthetic_request("seed-job4", priority=3, duration=2))
    preempted = wait_for(client, "seed-job1", {"preempting", "pending"})
    assert "seed-job4" in preempted["reason"]
    assert client.get_job("seed-job2")["state"] == "running", "the lowest priority job is preempted"

    jobs = {
        name: wait_for(client, name, FINISHED, timeout=90)
        for name in ("seed-job1", "seed-job2", "seed-job3", "seed-job4")
    }

    assert {job["state"] for job in jobs.values()} == {"completed"}
    job1 = jobs["seed-job1"]
    assert [attempt["outcome"] for attempt in job1["attempts"]] == ["preempted", "completed"]
    assert started_at(job1, 2) <= started_at(jobs["seed-job3"], 1), (
        "job1 resumes no later than job3 (earlier submission)"
    )
    assert started_at(jobs["seed-job4"], 1) <= started_at(job1, 2), (
        "job4 starts no later than job1 resumes (in one pass when job2 ended before job1's stop landed)"
    )


def test_cancel_a_running_job_stops_its_attempt(stack: LocalStack, client: SmqApiClient) -> None:
    client.add_job(synthetic_request("cancel-me", duration=60))
    running = wait_for(client, "cancel-me", {"running"})

    answer = client.cancel_job("cancel-me")

    assert answer["state"] == "stopping"
    cancelled = wait_for(client, "cancel-me", {"cancelled"}, timeout=30)
    assert cancelled["attempts"][-1]["outcome"] == "stopped"
    described = stack.boto3_client("sagemaker").describe_training_job(TrainingJobName=running["training_job_name"])
    assert described["TrainingJobStatus"] == "Stopped"


def test_a_failed_attempt_fails_the_job_with_sagemakers_reason(stack: LocalStack, client: SmqApiClient) -> None:
    client.add_job(synthetic_request("fails", duration=1, outcome="fail"))

    job = wait_for(client, "fails", FINISHED)

    assert job["state"] == "failed"
    described = stack.boto3_client("sagemaker").describe_training_job(TrainingJobName=job["training_job_name"])
    assert described["FailureReason"] and job["reason"].startswith(described["FailureReason"])
    assert "not retried (user code or request)" in job["reason"]


def test_a_duplicate_name_of_an_unfinished_job_is_refused(stack: LocalStack, client: SmqApiClient) -> None:
    client.add_job(synthetic_request("twice", duration=30))

    with pytest.raises(JobConflict) as refused:
        client.add_job(synthetic_request("twice", duration=1))

    assert refused.value.status == 409
    client.cancel_job("twice")
    wait_for(client, "twice", FINISHED, timeout=30)


def test_attempts_carry_the_queue_tags_and_one_checkpoint_location(stack: LocalStack, client: SmqApiClient) -> None:
    client.add_job(synthetic_request("described", duration=1))
    job = wait_for(client, "described", FINISHED)
    sagemaker = stack.boto3_client("sagemaker")

    described = sagemaker.describe_training_job(TrainingJobName=job["training_job_name"])
    tags = {tag["Key"]: tag["Value"] for tag in sagemaker.list_tags(ResourceArn=described["TrainingJobArn"])["Tags"]}

    assert tags["smq:job"] == "described" and tags["smq:attempt"] == "1" and tags["team"] == "e2e"
    assert tags["smq:stack"] == stack.options.stack_name
    assert described["CheckpointConfig"]["S3Uri"].startswith(f"s3://{stack.bucket}/checkpoints/described/")
    assert described["TrainingJobStatus"] == "Completed"
    assert [t["Status"] for t in described["SecondaryStatusTransitions"]][-1] == "Completed"
    assert described["ResourceConfig"]["InstanceType"] == POOL
    assert len(job["training_job_name"]) <= 63


def test_an_injected_failure_of_the_training_code_fails_the_job(stack: LocalStack, client: SmqApiClient) -> None:
    """An infrastructure failure (the default of `inject fail`) is retried: see test_spot_and_retry.py."""
    client.add_job(synthetic_request("doomed", duration=60))
    wait_for(client, "doomed", {"running"})

    stack.inject("doomed", "fail", reason="AlgorithmError: injected")

    job = wait_for(client, "doomed", FINISHED, timeout=30)
    assert job["state"] == "failed"
    assert job["reason"].startswith("AlgorithmError: injected; not retried")


@pytest.mark.slow
def test_a_spot_interruption_is_sagemakers_to_recover_and_stays_one_attempt(
    stack: LocalStack, client: SmqApiClient
) -> None:
    request = synthetic_request("spot", duration=3)
    request["EnableManagedSpotTraining"] = True
    request["StoppingCondition"] = {"MaxRuntimeInSeconds": 600, "MaxWaitTimeInSeconds": 1200}
    client.add_job(request)
    running = wait_for(client, "spot", {"running"})

    stack.inject("spot", "interrupt")

    job = wait_for(client, "spot", FINISHED, timeout=60)
    assert job["state"] == "completed"
    assert len(job["attempts"]) == 1
    transitions = stack.boto3_client("sagemaker").describe_training_job(TrainingJobName=running["training_job_name"])[
        "SecondaryStatusTransitions"
    ]
    assert "Interrupted" in [transition["Status"] for transition in transitions]
