"""The pool-usage board: one contract, run against the in-memory fake and the DynamoDB adapter (moto)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_pool_usage import USAGE_KEY, DynamoPoolUsageBoard
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.states import JobState
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.ports import InUse, PoolMeasure, PoolUsageBoard, PoolUsageReport

from tests.support.fakes import InMemoryPoolUsageBoard

NOW = datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)
REPORT = PoolUsageReport(
    pools=(
        PoolMeasure(pool="ml.p5.48xlarge", capacity=2, in_use=2, head="big-job"),
        PoolMeasure(pool="ml.g5.xlarge", capacity=8, in_use=0),
        PoolMeasure(pool="ml.c5.xlarge", capacity=None, in_use=4, head="unpooled-head"),
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
        pools=(PoolMeasure(pool="ml.g5.xlarge", capacity=8, in_use=1),), measured_at=NOW + timedelta(seconds=1)
    )

    board.publish(later)

    assert board.latest() == later


def test_a_head_is_kept_only_where_a_job_waits(board: PoolUsageBoard) -> None:
    board.publish(REPORT)

    latest = board.latest()

    assert latest is not None
    assert [measure.head for measure in latest.pools] == ["big-job", None, "unpooled-head"]


def test_the_board_item_holds_heads_and_no_pending_counts(dynamodb_client: Any, table: str) -> None:
    """Pending counts change between passes: GET /pools counts them when asked, so the board keeps none."""
    DynamoPoolUsageBoard(table, dynamodb_client).publish(REPORT)

    item = dynamodb_client.get_item(TableName=table, Key=USAGE_KEY, ConsistentRead=True)["Item"]

    pools = [entry["M"] for entry in item["pools"]["L"]]
    assert [pool.get("head") for pool in pools] == [{"S": "big-job"}, None, {"S": "unpooled-head"}]
    assert all("pending" not in pool for pool in pools)


def test_a_report_measured_earlier_never_replaces_a_later_one(board: PoolUsageBoard) -> None:
    board.publish(REPORT)
    slow_pass = PoolUsageReport(pools=(), measured_at=NOW - timedelta(microseconds=1))

    board.publish(slow_pass)

    assert board.latest() == REPORT


def test_the_report_item_is_no_job(dynamodb_client: Any, table: str) -> None:
    DynamoPoolUsageBoard(table, dynamodb_client).publish(REPORT)
    store = DynamoJobStore(table, dynamodb_client)

    assert store.in_use() == InUse(live=[], outside={}, pools=frozenset())
    assert store.list_jobs(states=list(JobState)).jobs == []
    assert store.pending_window("ml.g5.xlarge", 10) == []
    assert store.count_pending("ml.g5.xlarge") == 0


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
