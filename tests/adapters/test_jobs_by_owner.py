"""`GET /jobs?owner=` reads what its page holds, not every job in the requested states.

Reads are counted as DynamoDB bills them: the items each Query reads before its filter
(`ScannedCount`), over a store with no page size of its own, as deployed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import to_item
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import ACTIVE_STATES, JobState

from tests.adapters.builders import ALICE, BOB, G5, P5, T0, job
from tests.adapters.job_store_contract.subjects import STORES, Subject, make_subject, move, names, put, start
from tests.support.aws import create_queue_table

ALL = list(JobState)
WRITE_BATCH = 25


class ItemsRead:
    """The items every Query of a client reads (ScannedCount: before any filter, as billed)."""

    def __init__(self, client: Any) -> None:
        self.count = 0
        self._client = client
        client.meta.events.register("after-call.dynamodb.Query", self._record)

    def _record(self, parsed: dict[str, Any], **_: Any) -> None:
        self.count += int(parsed.get("ScannedCount", 0))

    def close(self) -> None:
        self._client.meta.events.unregister("after-call.dynamodb.Query", self._record)


@pytest.fixture
def items_read(dynamodb_client: Any) -> Iterator[ItemsRead]:
    counter = ItemsRead(dynamodb_client)
    yield counter
    counter.close()


@pytest.fixture
def queue(dynamodb_client: Any) -> str:
    return create_queue_table(dynamodb_client, f"smq-queue-{uuid.uuid4().hex[:8]}")


def stored(client: Any, table: str, jobs: list[Job]) -> None:
    """Items exactly as the store writes them (the codec), without a request per item."""
    for first in range(0, len(jobs), WRITE_BATCH):
        batch = [{"PutRequest": {"Item": to_item(each, ttl_days=30)}} for each in jobs[first : first + WRITE_BATCH]]
        client.batch_write_item(RequestItems={table: batch})


def many(prefix: str, count: int, *, owner: str, state: JobState, pool: str = G5, first_minute: int = 0) -> list[Job]:
    jobs = [job(f"{prefix}-{index:04d}", minute=first_minute + index, owner=owner, pool=pool) for index in range(count)]
    if state is JobState.CANCELLED:
        return [lifecycle.cancel_pending(each, T0, by=owner) for each in jobs]
    assert state is JobState.PENDING
    return jobs


@pytest.mark.parametrize("states", [ALL, sorted(ACTIVE_STATES), [JobState.PENDING]])
def test_a_callers_only_job_among_hundreds_of_others_costs_one_item_read(
    dynamodb_client: Any, queue: str, items_read: ItemsRead, states: list[JobState]
) -> None:
    stored(dynamodb_client, queue, many("done", 300, owner=BOB, state=JobState.CANCELLED))
    stored(dynamodb_client, queue, many("wait", 100, owner=BOB, state=JobState.PENDING))
    stored(dynamodb_client, queue, [job("mine", minute=500, owner=ALICE)])
    store = DynamoJobStore(queue, dynamodb_client)
    items_read.count = 0

    page = store.list_jobs(states=states, owner=ALICE, limit=50)

    assert names(page.jobs) == ["mine"] and page.next_token is None
    assert items_read.count == 1, "only the caller's own job is read"


def test_a_page_of_a_caller_with_a_long_history_reads_about_one_page_per_state(
    dynamodb_client: Any, queue: str, items_read: ItemsRead
) -> None:
    """Each state's Query asks for one job more than the page holds (to know whether another page
    follows), so a page of `limit` jobs over two states reads at most 2 × (limit + 1) items."""
    stored(dynamodb_client, queue, many("done", 60, owner=ALICE, state=JobState.CANCELLED))
    stored(dynamodb_client, queue, many("wait", 60, owner=ALICE, state=JobState.PENDING, first_minute=100))
    stored(dynamodb_client, queue, many("other", 100, owner=BOB, state=JobState.PENDING, first_minute=200))
    store = DynamoJobStore(queue, dynamodb_client)
    items_read.count = 0

    page = store.list_jobs(states=[JobState.PENDING, JobState.CANCELLED], owner=ALICE, limit=5)

    assert names(page.jobs) == [f"done-{index:04d}" for index in range(5)]
    assert page.next_token is not None
    assert items_read.count <= 2 * (5 + 1)


def test_an_owners_page_of_one_pool_reads_only_that_owners_jobs(
    dynamodb_client: Any, queue: str, items_read: ItemsRead
) -> None:
    """The pool is a filter within the owner's partition: what it reads is bounded by the caller's
    own jobs in the requested states, whatever other owners have queued."""
    stored(dynamodb_client, queue, many("other", 200, owner=BOB, state=JobState.PENDING))
    stored(dynamodb_client, queue, many("p5", 8, owner=ALICE, state=JobState.PENDING, pool=P5, first_minute=300))
    stored(dynamodb_client, queue, [job("g5", minute=400, owner=ALICE)])
    store = DynamoJobStore(queue, dynamodb_client)
    items_read.count = 0

    page = store.list_jobs(states=[JobState.PENDING], owner=ALICE, pool=G5, limit=50)

    assert names(page.jobs) == ["g5"]
    assert items_read.count <= 9


def test_a_job_written_before_the_owner_index_is_listed_by_owner_from_its_next_write(
    dynamodb_client: Any, queue: str
) -> None:
    legacy = to_item(job("old", owner=ALICE), ttl_days=30)
    del legacy["owner_state"]
    dynamodb_client.put_item(TableName=queue, Item=legacy)
    store = DynamoJobStore(queue, dynamodb_client)

    assert names(store.list_jobs(states=ALL, owner=ALICE).jobs) == []
    assert names(store.list_jobs(states=ALL).jobs) == ["old"], "listed without an owner, as before"

    move(store, "old", start)

    assert names(store.list_jobs(states=ALL, owner=ALICE).jobs) == ["old"]


@pytest.fixture(params=STORES)
def subject(request: pytest.FixtureRequest) -> Subject:
    return make_subject(request.param, request)


def test_a_job_moves_between_its_owners_states_as_it_changes(subject: Subject) -> None:
    put(subject.store, job("a", owner=ALICE))
    put(subject.store, job("b", minute=1, owner=BOB))

    assert names(subject.store.list_jobs(states=[JobState.PENDING], owner=ALICE).jobs) == ["a"]

    move(subject.store, "a", start)

    assert names(subject.store.list_jobs(states=[JobState.PENDING], owner=ALICE).jobs) == []
    assert names(subject.store.list_jobs(states=[JobState.STARTING], owner=ALICE).jobs) == ["a"]
    assert names(subject.store.list_jobs(states=[JobState.STARTING], owner=BOB).jobs) == []


def test_an_earlier_job_of_a_reused_name_is_in_no_owners_listing(subject: Subject) -> None:
    put(subject.store, job("shared", owner=ALICE), JobState.CANCELLED)
    put(subject.store, job("shared", minute=5, owner=BOB, job_id="bob-1"))

    assert names(subject.store.list_jobs(states=ALL, owner=ALICE).jobs) == []
    assert names(subject.store.list_jobs(states=ALL, owner=BOB).jobs) == ["shared"]
    item = subject.item("shared")
    assert item is not None and item["owner_state"] == {"S": f"{BOB}#pending"}
