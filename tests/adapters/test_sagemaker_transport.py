"""The SageMaker adapter when the network fails: timeouts and dropped connections, before or after
SageMaker took the call, including through botocore's own retries.

`FlakySageMaker` answers a real boto3 client from its `before-send` event, so every request goes
through botocore's serializer, retry handler and parser, and a fault can be met before the request
is sent (SageMaker never sees it) or after SageMaker applied it (the answer is lost).
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.endpoint
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ProxyConnectionError,
    ReadTimeoutError,
    ResponseStreamingError,
    SSLError,
)
from smq_lambda.adapters.sagemaker import SageMakerTrainingService
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.errors import StartOutcomeUnknown, StartRefused, TrainingServiceError

from tests.adapters.builders import T0, job
from tests.support.aws import REGION

ENDPOINT = "https://sagemaker.flaky.invalid"
"""No one answers there (moto neither): FlakySageMaker answers every request before it is sent."""


@dataclass(frozen=True)
class Lost:
    """The request reached SageMaker, which applied it; its answer never came back."""

    error: type[BotoCoreError]


@dataclass(frozen=True)
class Unsent:
    """The request never reached SageMaker."""

    error: type[BotoCoreError]


@dataclass(frozen=True)
class Refused:
    """SageMaker answered with an error code and did nothing."""

    code: str


Fault = Lost | Unsent | Refused


class _Body:
    def __init__(self, payload: bytes) -> None:
        self._payload = payload

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._payload


class FlakySageMaker:
    """Meets each attempt with the next fault; once they are spent, every call succeeds. It keeps
    the names CreateTrainingJob created, so a test can tell whether a lost create took effect."""

    def __init__(self, client: Any, faults: list[Fault]) -> None:
        self._faults = iter(faults)
        self.attempts = 0
        self.created: list[str] = []
        client.meta.events.register_first("before-send.sagemaker", self._answer)

    def _answer(self, request: Any, **_: Any) -> AWSResponse:
        self.attempts += 1
        fault = next(self._faults, None)
        if isinstance(fault, Unsent):
            raise fault.error(endpoint_url=request.url, proxy_url=request.url, error="injected")
        if isinstance(fault, Refused):
            return _answer(request, 400, {"__type": fault.code, "message": "injected"})
        if request.headers["X-Amz-Target"] == b"SageMaker.CreateTrainingJob":
            self.created.append(json.loads(request.body)["TrainingJobName"])
        if isinstance(fault, Lost):
            raise fault.error(endpoint_url=request.url, error="injected")
        return _answer(request, 200, {"TrainingJobArn": "arn:aws:sagemaker:us-east-1:123456789012:training-job/x"})


def _answer(request: Any, status: int, body: dict[str, Any]) -> AWSResponse:
    return AWSResponse(request.url, status, {"x-amzn-RequestId": "flaky"}, _Body(json.dumps(body).encode()))


@pytest.fixture(autouse=True)
def no_retry_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's retry backoff, without its sleeps."""
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=lambda _seconds: None))


def flaky(faults: list[Fault], *, attempts: int = 1) -> tuple[SageMakerTrainingService, FlakySageMaker]:
    """The adapter over a client that makes `attempts` attempts per call."""
    client = boto3.client(
        "sagemaker",
        region_name=REGION,
        endpoint_url=ENDPOINT,
        config=Config(retries={"mode": "standard", "total_max_attempts": attempts}),
    )
    sagemaker = FlakySageMaker(client, faults)
    return SageMakerTrainingService(client), sagemaker


def started(name: str) -> Job:
    return lifecycle.start(job(name), T0, reason="fits")


# ------------------------------------------------------------------------ create


@pytest.mark.parametrize(
    ("fault", "created"),
    [
        pytest.param(Lost(ReadTimeoutError), True, id="read-timeout"),
        pytest.param(Lost(ConnectionClosedError), True, id="connection-closed"),
        pytest.param(Lost(ResponseStreamingError), True, id="answer-cut-off"),
        pytest.param(Lost(SSLError), True, id="tls-error-reading-the-answer"),
        pytest.param(Unsent(SSLError), False, id="tls-handshake-failed"),
    ],
)
def test_a_create_that_may_have_reached_sagemaker_has_an_unknown_outcome(fault: Fault, created: bool) -> None:
    """botocore raises one TLS error class for a failed handshake and for a failed read of the
    answer, so a TLS error counts as possibly sent."""
    service, sagemaker = flaky([fault])
    current = started("lost")

    with pytest.raises(StartOutcomeUnknown) as unknown:
        service.start_attempt(current)

    assert type(unknown.value.__cause__) is fault.error
    assert (sagemaker.created == [current.attempts[0].training_job_name]) is created


@pytest.mark.parametrize("error", [EndpointConnectionError, ConnectTimeoutError, ProxyConnectionError])
def test_a_create_that_was_never_sent_is_a_transient_refusal(error: type[BotoCoreError]) -> None:
    service, sagemaker = flaky([Unsent(error)])

    with pytest.raises(StartRefused) as refused:
        service.start_attempt(started("unsent"))

    assert refused.value.lasting is False
    assert refused.value.reason.startswith("SageMaker could not be reached")
    assert sagemaker.created == []


@pytest.mark.parametrize(
    "faults",
    [
        pytest.param(
            [Lost(ReadTimeoutError), Unsent(EndpointConnectionError), Unsent(EndpointConnectionError)],
            id="then-unreachable",
        ),
        pytest.param(
            [Lost(ConnectionClosedError), Refused("ThrottlingException"), Refused("ThrottlingException")],
            id="then-throttled",
        ),
        pytest.param(
            [Lost(ReadTimeoutError), Unsent(ConnectTimeoutError), Refused("ValidationException")], id="then-invalid"
        ),
    ],
)
def test_a_lost_answer_then_retries_that_fail_otherwise_is_still_an_unknown_outcome(faults: list[Fault]) -> None:
    """botocore retries and raises the last attempt's error only; the first attempt created the job."""
    service, sagemaker = flaky(faults, attempts=3)
    current = started("retried")

    with pytest.raises(StartOutcomeUnknown):
        service.start_attempt(current)

    assert sagemaker.attempts == 3
    assert sagemaker.created == [current.attempts[0].training_job_name]


@pytest.mark.parametrize(
    ("last", "reason"),
    [
        (Unsent(EndpointConnectionError), "SageMaker could not be reached"),
        (Refused("ThrottlingException"), "ThrottlingException: injected"),
    ],
)
def test_retries_that_were_never_sent_stay_a_transient_refusal(last: Fault, reason: str) -> None:
    service, sagemaker = flaky([Unsent(EndpointConnectionError), Unsent(ConnectTimeoutError), last], attempts=3)

    with pytest.raises(StartRefused) as refused:
        service.start_attempt(started("never-reached"))

    assert sagemaker.attempts == 3
    assert refused.value.lasting is False
    assert refused.value.reason.startswith(reason)
    assert sagemaker.created == []


def test_a_retry_that_gets_through_after_a_lost_answer_is_a_start() -> None:
    """The retried create lands too (real SageMaker would answer ResourceInUse, also a start)."""
    service, sagemaker = flaky([Lost(ReadTimeoutError)], attempts=3)
    current = started("retried-through")

    service.start_attempt(current)

    assert sagemaker.attempts == 2
    assert sagemaker.created == [current.attempts[0].training_job_name] * 2


def test_an_unknown_outcome_does_not_leak_into_the_next_create() -> None:
    """The record of a lost answer belongs to one call: the next create, never sent, is a plain
    refusal."""
    service, _ = flaky([Lost(ReadTimeoutError), Unsent(EndpointConnectionError)])

    with pytest.raises(StartOutcomeUnknown):
        service.start_attempt(started("first-call"))
    with pytest.raises(StartRefused):
        service.start_attempt(started("second-call"))


# ------------------------------------------------------------------------ stop, describe, list


OPERATIONS = {
    "StopTrainingJob": lambda service: service.stop("train-1"),
    "DescribeTrainingJob": lambda service: service.describe("train-1"),
    "ListTrainingJobs": lambda service: service.outside_in_progress([]),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize(
    "fault",
    [Lost(ReadTimeoutError), Lost(ConnectionClosedError), Unsent(EndpointConnectionError), Unsent(ConnectTimeoutError)],
    ids=lambda fault: type(fault).__name__ + "-" + fault.error.__name__,
)
def test_transport_failures_of_other_calls_are_training_service_errors(operation: str, fault: Fault) -> None:
    """Nothing in the queue changes; the next pass or reconciliation asks again."""
    service, _ = flaky([fault])

    with pytest.raises(TrainingServiceError) as failed:
        OPERATIONS[operation](service)

    assert failed.value.operation == operation
    assert failed.value.code == fault.error.__name__
