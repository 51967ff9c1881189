"""The scheduler kick: one asynchronous invoke; a failed kick does not fail the API call."""

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
from smq_lambda.adapters.lambda_trigger import LambdaSchedulerTrigger

from tests.support.aws import REGION


@pytest.fixture(scope="module")
def client() -> Any:
    return boto3.client("lambda", region_name=REGION)


@pytest.fixture
def stub(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def test_kick_invokes_the_scheduler_asynchronously_with_the_reason(stub: Stubber, client: Any) -> None:
    payload = json.dumps({"source": "smq.api", "reason": "job train added"}).encode()
    stub.add_response(
        "invoke",
        {"StatusCode": 202},
        {"FunctionName": "smq-scheduler", "InvocationType": "Event", "Payload": payload},
    )

    LambdaSchedulerTrigger("smq-scheduler", client).kick("job train added")


@pytest.mark.parametrize("code", ["TooManyRequestsException", "ResourceNotFoundException", "ServiceException"])
def test_a_failed_kick_is_logged_not_raised(stub: Stubber, client: Any, code: str) -> None:
    stub.add_client_error("invoke", code, "no")

    LambdaSchedulerTrigger("smq-scheduler", client).kick("job train added")


@pytest.mark.parametrize(
    "error", [ReadTimeoutError, ConnectionClosedError, EndpointConnectionError, ConnectTimeoutError]
)
def test_a_kick_lost_on_the_network_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture, error: type[BotoCoreError]
) -> None:
    """The invoke fails in botocore's transport and is never answered."""
    client = boto3.client(
        "lambda",
        region_name=REGION,
        endpoint_url="https://lambda.unreachable.invalid",
        config=Config(retries={"total_max_attempts": 1}),
    )

    def fail(request: Any, **_: Any) -> None:
        raise error(endpoint_url=request.url, error="injected")

    client.meta.events.register_first("before-send.lambda.Invoke", fail)

    LambdaSchedulerTrigger("smq-scheduler", client).kick("job train added")

    [warning] = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert warning.getMessage() == "could not ask for a scheduling pass"
    assert getattr(warning, "reason", None) == "job train added"
