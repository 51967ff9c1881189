"""End to end on the local stack started with a policy (`smq local up --policy`): add-job refuses a
job missing a required tag, naming it; a training job started directly with boto3 that breaks the
policy is stopped, and the policy topic says which job and which rule."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from smq import SmqApiClient
from smq.errors import InvalidRequest
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, synthetic_request, wait_for
from tests.e2e.test_forged_events import wait_until_ended

POLICY = {"required_tags": ["project"], "max_instance_count": 1}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        capacity={POOL: 2},
        executor="synthetic",
        workdir=tmp_path_factory.mktemp("stack"),
        reconcile_every_seconds=5,
        policy=POLICY,
    )
    with LocalStack(options) as running:
        yield running


def tagged(request: dict[str, Any], **tags: str) -> dict[str, Any]:
    request["Tags"] = [tag for tag in request["Tags"] if tag["Key"] not in tags]
    request["Tags"] += [{"Key": key, "Value": value} for key, value in tags.items()]
    return request


def policy_topic_queue(stack: LocalStack) -> str:
    """An SQS queue subscribed to the policy topic, as an operator would subscribe one."""
    sqs = stack.boto3_client("sqs")
    url = sqs.create_queue(QueueName="policy-notifications")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    stack.boto3_client("sns").subscribe(TopicArn=stack.topic_arn("PolicyTopic"), Protocol="sqs", Endpoint=arn)
    return url


def notifications(stack: LocalStack, queue: str, *, wait: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + wait
    sqs = stack.boto3_client("sqs")
    while True:
        messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
        if messages or time.monotonic() > deadline:
            return [json.loads(message["Body"]) for message in messages]
        time.sleep(0.2)


@pytest.mark.slow
def test_the_policy_file_is_in_the_policy_parameter(stack: LocalStack) -> None:
    stored = stack.boto3_client("ssm").get_parameter(Name=stack.policy_parameter)["Parameter"]["Value"]
    assert json.loads(stored) == POLICY


@pytest.mark.slow
def test_add_job_refuses_a_job_missing_a_required_tag_naming_it(stack: LocalStack) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")

    with pytest.raises(InvalidRequest) as refused:
        client.add_job(synthetic_request("untagged"))

    assert refused.value.field == "Tags.project"
    assert "Tags.project is required by the policy" in refused.value.message
    client.add_job(tagged(synthetic_request("tagged", duration=1), project="vision"))
    wait_for(client, "tagged", {"completed"}, timeout=60)


@pytest.mark.slow
def test_a_job_started_directly_that_breaks_the_policy_is_stopped_and_notified(stack: LocalStack) -> None:
    queue = policy_topic_queue(stack)
    sagemaker = stack.boto3_client("sagemaker")
    compliant = tagged(synthetic_request("by-hand-ok", duration=2), project="vision")
    breaking = synthetic_request("by-hand-untagged", duration=300)

    sagemaker.create_training_job(**compliant)
    sagemaker.create_training_job(**breaking)

    ended = wait_until_ended(sagemaker, "by-hand-untagged")
    assert ended["TrainingJobStatus"] == "Stopped"
    assert wait_until_ended(sagemaker, "by-hand-ok")["TrainingJobStatus"] == "Completed"
    (notification,) = notifications(stack, queue)
    assert notification["Subject"] == "smq policy: stopped training job by-hand-untagged (required_tags)"
    assert "Tags.project is required by the policy" in notification["Message"]
    assert "Started by: unknown" in notification["Message"]
    assert notifications(stack, queue, wait=2) == [], "one notification per stopped job"
