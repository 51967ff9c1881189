"""The API under load: DynamoDB throttling or out of reach is a 503 with Retry-After, never a 500.

The handler runs over the real adapters on moto DynamoDB, through a client whose chosen calls fail
the way DynamoDB fails them (an error response, or no response at all) before they reach moto
(`before-call`, as botocore's Stubber answers: moto never sees them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError
from moto import mock_aws
from smq_lambda.adapters.dynamodb_pass_summaries import DynamoPassSummaries
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.handlers.api import create_app, idempotency_store, lambda_handler
from smq_lambda.service.queue_api import QueueService

from tests.api.builders import POOLS, training_request
from tests.api.gateway import LAMBDA_CONTEXT, ApiGateway, Reply, api_event
from tests.support.aws import REGION, create_queue_table, use_test_credentials
from tests.support.fakes import FakeConfigSource, RecordingTrigger

TABLE = "smq-unavailable-test"
THROTTLED = "ProvisionedThroughputExceededException"

Predicate = Callable[[str, dict[str, Any]], bool]


class FailingCalls:
    """Makes the DynamoDB calls that `when(operation, params)` picks fail with `failure` (a DynamoDB
    error code, or a botocore exception class for a call that gets no answer)."""

    def __init__(self) -> None:
        self.when: Predicate = lambda operation, params: False
        self.failure: str | type[Exception] = THROTTLED
        self.failed: list[str] = []

    def fail(self, when: Predicate, failure: str | type[Exception] = THROTTLED) -> None:
        self.when, self.failure = when, failure

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        operation = model.name
        if not self.when(operation, json.loads(params["body"] or b"{}")):
            return None
        self.failed.append(operation)
        if not isinstance(self.failure, str):
            raise self.failure(endpoint_url=params["url"])
        error = {"Error": {"Code": self.failure, "Message": "injected"}, "ResponseMetadata": {"HTTPStatusCode": 400}}
        return AWSResponse(params["url"], 400, {}, None), error


def every(*operations: str) -> Predicate:
    return lambda operation, params: operation in operations


def replay_record(operation: str, params: dict[str, Any]) -> bool:
    """Powertools' own writes: its in-progress record carries a `status`; it alone updates and deletes."""
    return (operation == "PutItem" and "status" in params.get("Item", {})) or operation in ("UpdateItem", "DeleteItem")


@pytest.fixture(scope="module")
def table() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as monkeypatch, mock_aws():
        use_test_credentials(monkeypatch)
        create_queue_table(boto3.client("dynamodb"), TABLE)
        yield


@pytest.fixture
def failing(table: None) -> FailingCalls:
    return FailingCalls()


@pytest.fixture
def api(failing: FailingCalls) -> ApiGateway:
    # One attempt per call, as if botocore's retries were already spent.
    client = boto3.client("dynamodb", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))
    client.meta.events.register_first("before-call.dynamodb", failing)
    service = QueueService(
        DynamoJobStore(TABLE, client),
        FakeConfigSource(POOLS),
        RecordingTrigger(),
        pass_summaries=DynamoPassSummaries(TABLE, client),
    )
    app = create_app(service, idempotency_store(TABLE, client))
    return ApiGateway(lambda_handler(lambda: app))


def assert_unavailable(reply: Reply, capsys: pytest.CaptureFixture[str]) -> None:
    assert reply.status == 503, reply.body
    assert reply.headers["Retry-After"] == "5"
    assert reply.field is None and "retry after 5 s" in reply.body["message"]
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [metric.get("ApiUnavailable") for metric in metrics if "ApiUnavailable" in metric] == [[1.0]]
    assert not any("ApiErrors" in metric for metric in metrics)


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/jobs"), ("GET", "/jobs/any-job"), ("GET", "/pools"), ("GET", "/quotas"), ("DELETE", "/jobs/any-job")],
)
@pytest.mark.parametrize("failure", [THROTTLED, "ThrottlingException", "InternalServerError", ReadTimeoutError])
def test_reads_of_an_unavailable_table_answer_503(
    api: ApiGateway,
    failing: FailingCalls,
    capsys: pytest.CaptureFixture[str],
    method: str,
    path: str,
    failure: str | type[Exception],
) -> None:
    failing.fail(every("Query", "GetItem", "BatchGetItem"), failure)

    reply = api.request(method, path)

    assert failing.failed
    assert_unavailable(reply, capsys)


def test_a_throttled_priority_change_answers_503_and_changes_nothing(
    api: ApiGateway, failing: FailingCalls, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(training_request("steady", priority=1))
    capsys.readouterr()
    failing.fail(every("UpdateItem", "TransactWriteItems"))

    reply = api.set_priority("steady", 9)

    assert_unavailable(reply, capsys)
    failing.fail(every())
    assert api.get("steady").body["priority"] == 1


def test_a_throttled_submission_answers_503_and_a_retry_queues_it(
    api: ApiGateway, failing: FailingCalls, capsys: pytest.CaptureFixture[str]
) -> None:
    failing.fail(lambda operation, params: operation == "PutItem" and "status" not in params.get("Item", {}))

    reply = api.add(training_request("retried-after-503"))

    assert_unavailable(reply, capsys)
    failing.fail(every())
    assert api.add(training_request("retried-after-503")).status == 202


@pytest.mark.parametrize("failure", [THROTTLED, ReadTimeoutError])
def test_a_replay_store_that_cannot_start_answers_503_and_queues_nothing(
    api: ApiGateway, failing: FailingCalls, capsys: pytest.CaptureFixture[str], failure: str | type[Exception]
) -> None:
    failing.fail(replay_record, failure)

    reply = api.add(training_request("never-started"))

    assert_unavailable(reply, capsys)
    failing.fail(every())
    assert api.get("never-started").status == 404


def test_a_job_queued_whose_replay_record_cannot_be_completed_is_still_accepted(
    api: ApiGateway, failing: FailingCalls
) -> None:
    failing.fail(
        lambda operation, params: operation == "UpdateItem" and params["Key"]["name"]["S"] != "#pools",
    )

    reply = api.add(training_request("queued-anyway"))

    assert failing.failed == ["UpdateItem"]
    assert (reply.status, reply.body["name"], reply.body["state"]) == (202, "queued-anyway", "pending")
    failing.fail(every())
    assert api.get("queued-anyway").status == 200


def test_other_failures_of_the_replay_store_are_still_internal_errors(
    api: ApiGateway, failing: FailingCalls, capsys: pytest.CaptureFixture[str]
) -> None:
    failing.fail(replay_record, "ValidationException")
    event = api_event("POST", "/add-job", body=json.dumps(training_request("misconfigured")))

    # Straight to the handler: openapi.yaml documents no 500, which no input may cause.
    response = api.handler(event, LAMBDA_CONTEXT)

    assert response["statusCode"] == 500
    assert "ApiErrors" in capsys.readouterr().out
