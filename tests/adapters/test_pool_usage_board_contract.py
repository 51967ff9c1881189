"""The pool-usage board: one contract, run against the in-memory fake and the DynamoDB adapter (moto)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_pool_usage import DynamoPoolUsageBoard
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.states import JobState
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.ports import PoolUsage, PoolUsageBoard, PoolUsageReport

from tests.support.fakes import InMemoryPoolUsageBoard

NOW = datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)
REPORT = PoolUsageReport(
    pools=(
        PoolUsage(pool="ml.p5.48xlarge", capacity=2, in_use=2, pending=3),
        PoolUsage(pool="ml.g5.xlarge", capacity=8, in_use=0, pending=0),
        PoolUsage(pool="ml.c5.xlarge", capacity=None, in_use=4, pending=1),
    ),
    measured_at=NOW,
)


@pytest.fixture(params=["memory", "dynamodb"])
def board(request: pytest.FixtureRequest) -> PoolUsageBoard:
    if request.param == "memory":
        return InMemoryPoolUsageBoard()
    client: Any = request.getfixturevalue("dynamodb_client")
    return DynamoPoolUsageBoard(request.getfixturevalue("table"), client)


def test_nothing_is_published_before_the_first_pass(board: PoolUsageBoard) -> None:
    assert board.latest() is None


def test_the_latest_report_reads_back_as_published(board: PoolUsageBoard) -> None:
    board.publish(REPORT)

    assert board.latest() == REPORT


def test_a_later_report_replaces_an_earlier_one(board: PoolUsageBoard) -> None:
    board.publish(REPORT)
    later = PoolUsageReport(
        pools=(PoolUsage(pool="ml.g5.xlarge", capacity=8, in_use=1, pending=0),), measured_at=NOW + timedelta(seconds=1)
    )

    board.publish(later)

    assert board.latest() == later


def test_a_report_measured_earlier_never_replaces_a_later_one(board: PoolUsageBoard) -> None:
    board.publish(REPORT)
    slow_pass = PoolUsageReport(pools=(), measured_at=NOW - timedelta(microseconds=1))

    board.publish(slow_pass)

    assert board.latest() == REPORT


def test_the_report_item_is_no_job(dynamodb_client: Any, table: str) -> None:
    DynamoPoolUsageBoard(table, dynamodb_client).publish(REPORT)
    store = DynamoJobStore(table, dynamodb_client)

    assert store.active_jobs() == []
    assert store.list_jobs(states=list(JobState)).jobs == []


@pytest.mark.parametrize(
    "code", ["ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError"]
)
def test_a_throttled_table_is_service_unavailable(dynamodb_client: Any, code: str) -> None:
    board = DynamoPoolUsageBoard("smq-queue", dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        stubber.add_client_error("put_item", service_error_code=code, http_status_code=400)
        stubber.add_client_error("get_item", service_error_code=code, http_status_code=400)
        with pytest.raises(ServiceUnavailable) as published:
            board.publish(REPORT)
        with pytest.raises(ServiceUnavailable) as read:
            board.latest()
    assert published.value.code == code
    assert read.value.service == "DynamoDB"
