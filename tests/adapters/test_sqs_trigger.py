"""The scheduler kick: one message on the scheduler queue; a failed kick does not fail the API call."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from botocore.stub import Stubber
from moto import mock_aws
from smq_lambda.adapters.sqs_trigger import SqsSchedulerTrigger

from tests.support.aws import REGION, use_test_credentials

QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/smq-SchedulerQueue"


@pytest.fixture(scope="module")
def client() -> Any:
    return boto3.client("sqs", region_name=REGION)


@pytest.fixture
def stub(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def test_kick_sends_the_reason_to_the_scheduler_queue(stub: Stubber, client: Any) -> None:
    body = json.dumps({"source": "smq.api", "reason": "job train added"})
    stub.add_response(
        "send_message",
        {"MessageId": "59b2b3b4-0000-4000-8000-000000000000", "MD5OfMessageBody": "0" * 32},
        {"QueueUrl": QUEUE_URL, "MessageBody": body},
    )

    SqsSchedulerTrigger(QUEUE_URL, client).kick("job train added")


def test_a_kick_is_a_message_the_queue_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    use_test_credentials(monkeypatch)
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="smq-SchedulerQueue")["QueueUrl"]

        SqsSchedulerTrigger(url, sqs).kick("job train added")

        (message,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert json.loads(message["Body"]) == {"source": "smq.api", "reason": "job train added"}


@pytest.mark.parametrize(
    "code", ["AWS.SimpleQueueService.NonExistentQueue", "KmsThrottled", "RequestThrottled", "InternalError"]
)
def test_a_failed_kick_is_logged_not_raised(stub: Stubber, client: Any, code: str) -> None:
    stub.add_client_error("send_message", code, "no")

    SqsSchedulerTrigger(QUEUE_URL, client).kick("job train added")


@pytest.mark.parametrize(
    "error", [ReadTimeoutError, ConnectionClosedError, EndpointConnectionError, ConnectTimeoutError]
)
def test_a_kick_lost_on_the_network_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture, error: type[BotoCoreError]
) -> None:
    """The send fails in botocore's transport and is never answered."""
    client = boto3.client(
        "sqs",
        region_name=REGION,
        endpoint_url="https://sqs.unreachable.invalid",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}),
    )

    def fail(request: Any, **_: Any) -> None:
        raise error(endpoint_url=request.url, error="injected")

    client.meta.events.register_first("before-send.sqs.SendMessage", fail)

    SqsSchedulerTrigger(QUEUE_URL, client).kick("job train added")

    [warning] = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert warning.getMessage() == "could not ask for a scheduling pass"
    assert getattr(warning, "reason", None) == "job train added"
