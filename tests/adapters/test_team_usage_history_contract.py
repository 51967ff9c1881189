"""The teams' usage history: one contract, run against the in-memory fake and the DynamoDB adapter (moto)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.dynamodb_team_usage import TEAM_USAGE_KEY, DynamoTeamUsageHistory
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import ServiceUnavailable, VersionConflict
from smq_lambda.pass_summary import TeamUsageRecord
from smq_lambda.ports import InUse, TeamUsageHistory

from tests.support.fake_team_usage import InMemoryTeamUsageHistory

NOW = datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)
FIRST = TeamUsageRecord(usage={}, at=NOW)
SECOND = TeamUsageRecord(usage={"vision": 7200.5, "(unassigned)": 0.25}, at=NOW + timedelta(seconds=30))


@pytest.fixture(params=["memory", "dynamodb"])
def history(request: pytest.FixtureRequest) -> TeamUsageHistory:
    if request.param == "memory":
        return InMemoryTeamUsageHistory()
    client: Any = request.getfixturevalue("dynamodb_client")
    return DynamoTeamUsageHistory(request.getfixturevalue("table"), client)


def test_there_is_no_record_before_the_first_save(history: TeamUsageHistory) -> None:
    assert history.load() is None


def test_a_record_reads_back_as_saved(history: TeamUsageHistory) -> None:
    history.save(FIRST, previous=None)
    history.save(SECOND, previous=FIRST)

    assert history.load() == SECOND


def test_a_first_save_loses_to_a_record_already_there(history: TeamUsageHistory) -> None:
    history.save(FIRST, previous=None)

    with pytest.raises(VersionConflict):
        history.save(SECOND, previous=None)

    assert history.load() == FIRST


def test_a_save_from_a_stale_record_loses_and_changes_nothing(history: TeamUsageHistory) -> None:
    history.save(FIRST, previous=None)
    history.save(SECOND, previous=FIRST)
    counted_again = TeamUsageRecord(usage={"vision": 1.0}, at=SECOND.at + timedelta(seconds=1))

    with pytest.raises(VersionConflict):
        history.save(counted_again, previous=FIRST)

    assert history.load() == SECOND


def test_of_two_passes_counting_the_same_interval_exactly_one_saves(history: TeamUsageHistory) -> None:
    history.save(FIRST, previous=None)
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def count(seconds: int) -> None:
        barrier.wait()
        record = TeamUsageRecord(usage={"vision": float(seconds)}, at=NOW + timedelta(seconds=seconds))
        try:
            history.save(record, previous=FIRST)
            outcomes.append("saved")
        except VersionConflict:
            outcomes.append("lost")

    threads = [threading.Thread(target=count, args=(seconds,)) for seconds in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["lost", "lost", "lost", "saved"]


def test_the_usage_item_is_no_job(dynamodb_client: Any, table: str) -> None:
    DynamoTeamUsageHistory(table, dynamodb_client).save(SECOND, previous=None)
    store = DynamoJobStore(table, dynamodb_client)

    item = dynamodb_client.get_item(TableName=table, Key=TEAM_USAGE_KEY, ConsistentRead=True)["Item"]

    assert set(item) == {"name", "at", "usage"}
    assert store.in_use() == InUse(live=[], outside={}, pools=frozenset())
    assert store.list_jobs(states=list(JobState)).jobs == []
    assert store.pending_front("ml.g5.xlarge", 10) == []
    assert store.pending_front("ml.g5.xlarge", 10, team="") == []


@pytest.mark.parametrize(
    "code", ["ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError"]
)
def test_a_throttled_table_is_service_unavailable(dynamodb_client: Any, code: str) -> None:
    history = DynamoTeamUsageHistory("smq-queue", dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        stubber.add_client_error("put_item", service_error_code=code, http_status_code=400)
        stubber.add_client_error("get_item", service_error_code=code, http_status_code=400)
        with pytest.raises(ServiceUnavailable) as saved:
            history.save(FIRST, previous=None)
        with pytest.raises(ServiceUnavailable) as read:
            history.load()
    assert saved.value.code == code
    assert read.value.service == "DynamoDB"
