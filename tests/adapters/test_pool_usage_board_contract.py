"""The pool-usage board: one contract, run against the in-memory fake and the DynamoDB adapter (moto)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_pool_usage import (
    MAX_ASSUMED_CHARS,
    MAX_ESTIMATES,
    MAX_TEAM_ROWS,
    USAGE_KEY,
    DynamoPoolUsageBoard,
)
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.config.teams import UNASSIGNED
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.forecast.estimate import DEFAULT_MAX_JOBS
from smq_lambda.forecast.start_estimate import EstimateKind, GivenEstimate, StartEstimate
from smq_lambda.pool_usage import PoolMeasure, PoolUsageReport, TeamMeasure
from smq_lambda.ports import InUse, PoolUsageBoard

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


WITH_TEAMS = PoolUsageReport(
    pools=REPORT.pools,
    measured_at=NOW,
    teams=(
        TeamMeasure("vision", "ml.p5.48xlarge", 1, 2, borrowed=1, lent=0, pending=3, longest_wait_s=754.25),
        TeamMeasure("nlp", "ml.p5.48xlarge", 1, 0, borrowed=0, lent=1),
        TeamMeasure(UNASSIGNED, "ml.c5.xlarge", None, 4, borrowed=0, lent=0, pending=1, longest_wait_s=0.000001),
    ),
    estimates={
        "big-job": StartEstimate(
            "big-job", NOW + timedelta(hours=2, microseconds=7), "durations from smq:expected-duration"
        ),
        "never": StartEstimate("never", None, "beyond the 24 h horizon"),
        "learned": StartEstimate(
            "learned",
            NOW + timedelta(minutes=5),
            "assumes 1 job ahead runs as long as similar jobs that completed",
            earliest=NOW + timedelta(minutes=3),
            latest=NOW + timedelta(minutes=7),
            kind=EstimateKind.BAND,
        ),
    },
    first_estimates={
        "big-job": GivenEstimate("big-job", NOW, NOW, NOW + timedelta(hours=2), None),
        "learned": GivenEstimate(
            "learned", NOW, NOW + timedelta(minutes=3), NOW + timedelta(minutes=5), NOW + timedelta(minutes=7)
        ),
    },
    budget_held=frozenset({"held"}),
    explained=frozenset({"big-job", "held", "too-large"}),
)


def test_team_measures_and_start_estimates_read_back_as_published(board: PoolUsageBoard) -> None:
    board.publish(WITH_TEAMS)

    assert board.latest() == WITH_TEAMS


def test_estimates_are_kept_within_the_items_bounds(board: PoolUsageBoard) -> None:
    """The soonest MAX_ESTIMATES (those beyond the horizon dropped first), each `assumed` clipped."""
    names = [f"job-{index:03}" for index in range(MAX_ESTIMATES + 50)]
    estimates = {
        name: StartEstimate(name, None if index < 30 else NOW + timedelta(minutes=index), "x" * 1000)
        for index, name in enumerate(names)
    }
    board.publish(replace(REPORT, estimates=estimates))

    latest = board.latest()

    assert latest is not None
    assert list(latest.estimates) == names[30 : 30 + MAX_ESTIMATES]
    assert {len(estimate.assumed) for estimate in latest.estimates.values()} == {MAX_ASSUMED_CHARS}
    assert all(estimate.assumed.endswith("…") for estimate in latest.estimates.values())


def item_size(value: dict[str, Any]) -> int:
    """An attribute value's size as DynamoDB counts it (an upper bound for numbers): UTF-8 bytes of
    strings and names, 3 bytes per list or map and 1 per element."""
    ((kind, content),) = value.items()
    if kind == "L":
        return 3 + sum(1 + item_size(element) for element in content)
    if kind == "M":
        return 3 + sum(1 + len(name.encode()) + item_size(element) for name, element in content.items())
    return 1 if kind == "NULL" else len(content.encode())


def test_the_largest_report_fits_one_item(dynamodb_client: Any, table: str) -> None:
    """Every name at its longest, every bound reached: well under DynamoDB's 400 KB."""
    pools = tuple(PoolMeasure(f"ml.p{index:02}.48xlarge", 10**6, 10**6, "h" * 63) for index in range(50))
    teams = tuple(
        TeamMeasure("t" * 256, f"ml.p{index:02}.48xlarge", 10**6, 10**6, 10**6, 10**6, 10**6, 10**7 + 0.123456)
        for index in range(MAX_TEAM_ROWS + 10)
    )
    names = [f"{index:03}".ljust(63, "j") for index in range(500)]
    estimates = {
        name: StartEstimate(name, NOW, "é" * 1000, earliest=NOW, latest=NOW, kind=EstimateKind.CEILING)
        for name in names
    }
    first = {name: GivenEstimate(name, NOW, NOW, NOW, NOW) for name in names}
    largest = PoolUsageReport(
        pools=pools,
        measured_at=NOW,
        teams=teams,
        estimates=estimates,
        first_estimates=first,
        budget_held=frozenset(names),
        explained=frozenset(names),
    )
    board = DynamoPoolUsageBoard(table, dynamodb_client)

    board.publish(largest)

    item = dynamodb_client.get_item(TableName=table, Key=USAGE_KEY, ConsistentRead=True)["Item"]
    assert sum(len(name) + item_size(value) for name, value in item.items()) < 345_000
    latest = board.latest()
    assert latest is not None
    assert (len(latest.teams), len(latest.estimates), len(latest.first_estimates)) == (
        MAX_TEAM_ROWS,
        MAX_ESTIMATES,
        MAX_ESTIMATES,
    )
    assert latest.explained is not None and len(latest.explained) == len(latest.budget_held) == MAX_ESTIMATES
    assert latest.first_estimates.keys() == latest.estimates.keys()
    assert latest.teams == teams[:MAX_TEAM_ROWS]


def test_the_board_keeps_every_estimate_a_pass_makes() -> None:
    assert MAX_ESTIMATES >= DEFAULT_MAX_JOBS


def test_a_report_written_before_passes_published_what_they_explained_reads_as_not_knowing(
    dynamodb_client: Any, table: str
) -> None:
    """An item of the last release has no `explained`: None (the API then shows each stored reason),
    never an empty set (which would say the pass explained no job)."""
    board = DynamoPoolUsageBoard(table, dynamodb_client)
    board.publish(WITH_TEAMS)
    dynamodb_client.update_item(TableName=table, Key=USAGE_KEY, UpdateExpression="REMOVE explained")

    latest = board.latest()

    assert latest is not None and latest.explained is None
    assert latest == replace(WITH_TEAMS, explained=None)
