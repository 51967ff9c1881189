"""The spot interruption book: one contract, run against the in-memory fake and the DynamoDB
adapter (moto); and the counting of reports into it."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from smq_lambda.adapters.dynamodb_spot_rates import SPOT_INTERRUPTIONS_KEY, DynamoSpotInterruptionBook
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.spot_rates import SpotInterruptions, with_interruptions
from smq_lambda.errors import VersionConflict
from smq_lambda.ports import SpotInterruptionBook, TrainingJobStatus
from smq_lambda.service.spot_interruptions import count_interruptions

from tests.support.fake_spot_rates import InMemorySpotInterruptionBook

NOW = datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=UTC)
G5 = "ml.g5.xlarge"


@pytest.fixture(params=["memory", "dynamodb"])
def book(request: pytest.FixtureRequest) -> SpotInterruptionBook:
    if request.param == "memory":
        return InMemorySpotInterruptionBook()
    client: Any = request.getfixturevalue("dynamodb_client")
    return DynamoSpotInterruptionBook(request.getfixturevalue("table"), client)


def counted(book: SpotInterruptions, name: str, seen: int, at: datetime = NOW) -> SpotInterruptions:
    updated = with_interruptions(book, name, G5, seen, at)
    assert updated is not None
    return updated


def test_the_book_is_empty_before_the_first_save(book: SpotInterruptionBook) -> None:
    assert book.load() == SpotInterruptions()


def test_a_book_reads_back_as_saved(book: SpotInterruptionBook) -> None:
    first = counted(SpotInterruptions(), "a-1", 2)
    second = counted(first, "b-1", 1, NOW + timedelta(seconds=30))
    book.save(first, previous=SpotInterruptions())
    book.save(second, previous=first)
    assert book.load() == second


def test_a_save_from_a_stale_book_loses_and_changes_nothing(book: SpotInterruptionBook) -> None:
    first = counted(SpotInterruptions(), "a-1", 1)
    book.save(first, previous=SpotInterruptions())
    with pytest.raises(VersionConflict):
        book.save(counted(SpotInterruptions(), "a-1", 1), previous=SpotInterruptions())
    assert book.load() == first


def job() -> Job:
    return Job(name="a", job_id="0" * 16, state=JobState.RUNNING, priority=0, submitted_at=NOW,
               demand={G5: 1}, owner="o")  # fmt: skip


def interrupted(times: int) -> TrainingJobStatus:
    transitions: list[dict[str, Any]] = [{"Status": "Starting"}, {"Status": "Training"}]
    transitions += [{"Status": "Interrupted"}, {"Status": "Training"}] * times
    return TrainingJobStatus(
        name="a-1", status="InProgress", secondary_status="Training", secondary_status_transitions=tuple(transitions)
    )


def test_concurrent_duplicate_reports_count_each_interruption_once(book: SpotInterruptionBook) -> None:
    barrier = threading.Barrier(4)

    def report(seen: int) -> None:
        barrier.wait()
        count_interruptions(book, job(), 1, interrupted(seen), NOW)

    threads = [threading.Thread(target=report, args=(seen,)) for seen in (3, 3, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    count_interruptions(book, job(), 1, interrupted(1), NOW)  # a late report

    assert len(book.load().by_type[G5]) == 3


def test_the_book_item_is_no_job(dynamodb_client: Any, table: str) -> None:
    DynamoSpotInterruptionBook(table, dynamodb_client).save(
        counted(SpotInterruptions(), "a-1", 1), previous=SpotInterruptions()
    )
    store = DynamoJobStore(table, dynamodb_client)

    item = dynamodb_client.get_item(TableName=table, Key=SPOT_INTERRUPTIONS_KEY, ConsistentRead=True)["Item"]

    assert set(item) == {"name", "version", "types", "counted"}
    assert store.list_jobs(states=list(JobState)).jobs == []
    assert store.pending_front(G5, 10) == []
