"""The scheduler kick: one asynchronous invoke; a failed kick does not fail the API call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
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
