"""The pass summaries: one contract, run against the in-memory fake and the DynamoDB adapter (moto)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_pass_summaries import (
    MAX_ASSUMED_CHARS,
    MAX_ESTIMATES,
    MAX_TEAM_ROWS,
    SUMMARY_KEY,
    DynamoPassSummaries,
)
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.config.teams import UNASSIGNED
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.forecast.estimate import DEFAULT_MAX_JOBS
from smq_lambda.forecast.start_estimate import EstimateKind, GivenEstimate, StartEstimate
from smq_lambda.pass_summary import PassSummary, PoolMeasure, TeamMeasure
from smq_lambda.ports import InUse, PassSummaries

from tests.support.fakes import InMemoryPassSummaries

NOW = datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)
SUMMARY = PassSummary(
    pools=(
        PoolMeasure(pool="ml.p5.48xlarge", capacity=2, in_use=2, head="big-job"),
        PoolMeasure(pool="ml.g5.xlarge", capacity=8, in_use=0),
        PoolMeasure(pool="ml.c5.xlarge", capacity=None, in_use=4, head="unpooled-head"),
    ),
    measured_at=NOW,
)


@pytest.fixture(params=["memory", "dynamodb"])
def summaries(request: pytest.FixtureRequest) -> PassSummaries:
    if request.param == "memory":
        return InMemoryPassSummaries()
    client: Any = request.getfixturevalue("dynamodb_client")
    return DynamoPassSummaries(request.getfixturevalue("table"), client)


def test_nothing_is_published_before_the_first_pass(summaries: PassSummaries) -> None:
    assert summaries.latest() is None


def test_the_latest_summary_reads_back_as_published(summaries: PassSummaries) -> None:
    summaries.publish(SUMMARY)

    assert summaries.latest() == SUMMARY


def test_a_later_summary_replaces_an_earlier_one(summaries: PassSummaries) -> None:
    summaries.publish(SUMMARY)
    later = PassSummary(
        pools=(PoolMeasure(pool="ml.g5.xlarge", capacity=8, in_use=1),), measured_at=NOW + timedelta(seconds=1)
    )

    summaries.publish(later)

    assert summaries.latest() == later


def test_a_head_is_kept_only_where_a_job_waits(summaries: PassSummaries) -> None:
    summaries.publish(SUMMARY)

    latest = summaries.latest()

    assert latest is not None
    assert [measure.head for measure in latest.pools] == ["big-job", None, "unpooled-head"]


def test_the_summary_item_holds_heads_and_no_pending_counts(dynamodb_client: Any, table: str) -> None:
    """Pending counts change between passes: GET /pools counts them when asked, so the summary keeps none."""
    DynamoPassSummaries(table, dynamodb_client).publish(SUMMARY)

    item = dynamodb_client.get_item(TableName=table, Key=SUMMARY_KEY, ConsistentRead=True)["Item"]

    pools = [entry["M"] for entry in item["pools"]["L"]]
    assert [pool.get("head") for pool in pools] == [{"S": "big-job"}, None, {"S": "unpooled-head"}]
    assert all("pending" not in pool for pool in pools)


def test_a_summary_measured_earlier_never_replaces_a_later_one(summaries: PassSummaries) -> None:
    summaries.publish(SUMMARY)
    slow_pass = PassSummary(pools=(), measured_at=NOW - timedelta(microseconds=1))

    summaries.publish(slow_pass)

    assert summaries.latest() == SUMMARY


def test_the_summary_item_is_no_job(dynamodb_client: Any, table: str) -> None:
    DynamoPassSummaries(table, dynamodb_client).publish(SUMMARY)
    store = DynamoJobStore(table, dynamodb_client)

    assert store.in_use() == InUse(live=[], outside={}, pools=frozenset())
    assert store.list_jobs(states=list(JobState)).jobs == []
    assert store.pending_front("ml.g5.xlarge", 10) == []
    assert store.count_pending("ml.g5.xlarge") == 0


@pytest.mark.parametrize(
    "code", ["ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError"]
)
def test_a_throttled_table_is_service_unavailable(dynamodb_client: Any, code: str) -> None:
    summaries = DynamoPassSummaries("smq-queue", dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        stubber.add_client_error("put_item", service_error_code=code, http_status_code=400)
        stubber.add_client_error("get_item", service_error_code=code, http_status_code=400)
        with pytest.raises(ServiceUnavailable) as published:
            summaries.publish(SUMMARY)
        with pytest.raises(ServiceUnavailable) as read:
            summaries.latest()
    assert published.value.code == code
    assert read.value.service == "DynamoDB"


WITH_TEAMS = PassSummary(
    pools=SUMMARY.pools,
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
        "kept": StartEstimate("kept", NOW, "kept from an earlier pass", computed_at=NOW - timedelta(minutes=2)),
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


def test_team_measures_and_start_estimates_read_back_as_published(summaries: PassSummaries) -> None:
    summaries.publish(WITH_TEAMS)

    assert summaries.latest() == WITH_TEAMS


def test_estimates_are_kept_within_the_items_bounds(summaries: PassSummaries) -> None:
    """The soonest MAX_ESTIMATES (those beyond the horizon dropped first), each `assumed` clipped."""
    names = [f"job-{index:03}" for index in range(MAX_ESTIMATES + 50)]
    estimates = {
        name: StartEstimate(name, None if index < 30 else NOW + timedelta(minutes=index), "x" * 1000)
        for index, name in enumerate(names)
    }
    summaries.publish(replace(SUMMARY, estimates=estimates))

    latest = summaries.latest()

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


def test_the_largest_summary_fits_one_item(dynamodb_client: Any, table: str) -> None:
    """Every name at its longest, every bound reached: well under DynamoDB's 400 KB."""
    pools = tuple(PoolMeasure(f"ml.p{index:02}.48xlarge", 10**6, 10**6, "h" * 63) for index in range(50))
    teams = tuple(
        TeamMeasure("t" * 256, f"ml.p{index:02}.48xlarge", 10**6, 10**6, 10**6, 10**6, 10**6, 10**7 + 0.123456)
        for index in range(MAX_TEAM_ROWS + 10)
    )
    names = [f"{index:03}".ljust(63, "j") for index in range(500)]
    estimates = {
        name: StartEstimate(name, NOW, "é" * 1000, earliest=NOW, latest=NOW, kind=EstimateKind.CEILING, computed_at=NOW)
        for name in names
    }
    first = {name: GivenEstimate(name, NOW, NOW, NOW, NOW) for name in names}
    largest = PassSummary(
        pools=pools,
        measured_at=NOW,
        teams=teams,
        estimates=estimates,
        first_estimates=first,
        budget_held=frozenset(names),
        explained=frozenset(names),
    )
    summaries = DynamoPassSummaries(table, dynamodb_client)

    summaries.publish(largest)

    item = dynamodb_client.get_item(TableName=table, Key=SUMMARY_KEY, ConsistentRead=True)["Item"]
    assert sum(len(name) + item_size(value) for name, value in item.items()) < 345_000
    latest = summaries.latest()
    assert latest is not None
    assert (len(latest.teams), len(latest.estimates), len(latest.first_estimates)) == (
        MAX_TEAM_ROWS,
        MAX_ESTIMATES,
        MAX_ESTIMATES,
    )
    assert latest.explained is not None and len(latest.explained) == len(latest.budget_held) == MAX_ESTIMATES
    assert latest.first_estimates.keys() == latest.estimates.keys()
    assert latest.teams == teams[:MAX_TEAM_ROWS]


def test_the_summary_keeps_every_estimate_a_pass_makes() -> None:
    assert MAX_ESTIMATES >= DEFAULT_MAX_JOBS


def test_a_summary_written_before_passes_published_what_they_explained_reads_as_not_knowing(
    dynamodb_client: Any, table: str
) -> None:
    """An item of the last release has no `explained`: None (the API then shows each stored reason),
    never an empty set (which would say the pass explained no job)."""
    summaries = DynamoPassSummaries(table, dynamodb_client)
    summaries.publish(WITH_TEAMS)
    dynamodb_client.update_item(TableName=table, Key=SUMMARY_KEY, UpdateExpression="REMOVE explained")

    latest = summaries.latest()

    assert latest is not None and latest.explained is None
    assert latest == replace(WITH_TEAMS, explained=None)
