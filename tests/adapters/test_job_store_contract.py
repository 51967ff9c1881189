"""One contract for every JobStore: the in-memory fake and the DynamoDB store on moto.

The DynamoDB store reads two items per Query page here, so every listing crosses page boundaries.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import pytest
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import archive_key
from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import MAX_EARLIER_JOBS, MAX_INLINE_ATTEMPTS, Job, attempt_name
from smq_lambda.domain.states import ACTIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import InvalidRequest, JobConflict, VersionConflict
from smq_lambda.ports import JobStore

from tests.adapters.bounds import ITEM_LIMIT, attempted, item_size
from tests.adapters.builders import ALICE, BOB, G5, P5, T0, job
from tests.support.aws import create_queue_table
from tests.support.fakes import InMemoryJobStore

TTL_DAYS = 7
NOW = T0 + timedelta(hours=1)


STORES = ["memory", "dynamodb"]


@dataclass
class Subject:
    store: JobStore
    item: Callable[[str], dict[str, Any] | None]
    """The raw stored item, as DynamoDB would hold it."""


def make_subject(kind: str, request: pytest.FixtureRequest) -> Subject:
    if kind == "memory":
        memory = InMemoryJobStore(ttl_days=TTL_DAYS)
        return Subject(memory, memory.item)
    client = request.getfixturevalue("dynamodb_client")
    table = create_queue_table(client, f"smq-queue-{uuid.uuid4().hex[:8]}")

    def item(name: str) -> dict[str, Any] | None:
        return client.get_item(TableName=table, Key={"name": {"S": name}}, ConsistentRead=True).get("Item")

    return Subject(DynamoJobStore(table, client, ttl_days=TTL_DAYS, page_size=2), item)


@pytest.fixture(params=STORES)
def subject(request: pytest.FixtureRequest) -> Subject:
    return make_subject(request.param, request)


Step = Callable[[Job], Job]


def start(current: Job) -> Job:
    return lifecycle.start(current, NOW, reason="fits")


def running(current: Job) -> Job:
    return lifecycle.mark_running(current, NOW)


def preempt(current: Job) -> Job:
    return lifecycle.request_stop(current, NOW, preempt=True, reason="preempted for a higher priority")


def stop(current: Job) -> Job:
    return lifecycle.request_stop(current, NOW, preempt=False, reason="cancelled")


def requeue(current: Job) -> Job:
    return lifecycle.requeue(current, NOW, outcome="preempted", reason="preempted")


def complete(current: Job) -> Job:
    return lifecycle.finish(current, JobState.COMPLETED, NOW + timedelta(minutes=5), outcome="completed", reason=None)


def refuse(current: Job) -> Job:
    return lifecycle.refuse_start(current, NOW, reason="ValidationException: bad role", lasting=True)


def cancel(current: Job) -> Job:
    return lifecycle.cancel_pending(current, NOW, by=ALICE)


PATH_TO: dict[JobState, list[Step]] = {
    JobState.PENDING: [],
    JobState.STARTING: [start],
    JobState.RUNNING: [start, running],
    JobState.PREEMPTING: [start, running, preempt],
    JobState.STOPPING: [start, running, stop],
    JobState.COMPLETED: [start, running, complete],
    JobState.FAILED: [start, refuse],
    JobState.CANCELLED: [cancel],
}


def move(store: JobStore, name: str, *steps: Step) -> Job:
    """Apply each step to the stored job and save it conditionally, as the services do."""
    current = store.get(name)
    assert current is not None
    for step in steps:
        current = store.save(step(current), expected_version=current.version)
    return current


def put(store: JobStore, new: Job, state: JobState = JobState.PENDING) -> Job:
    store.create(new)
    return move(store, new.name, *PATH_TO[state])


def names(jobs: list[Job]) -> list[str]:
    return [each.name for each in jobs]


# ------------------------------------------------------------------------ create and get


def test_create_stores_version_one_and_get_returns_it_exactly(subject: Subject) -> None:
    submitted = job("hetero", priority=7, groups=[(P5, 2), (G5, 4)], tags=[{"Key": "team", "Value": "vision é"}])

    created = subject.store.create(submitted)
    loaded = subject.store.get("hetero")

    assert created == replace(submitted, version=1)
    assert loaded == created
    assert loaded is not None
    assert loaded.request == submitted.request
    assert list(loaded.demand) == [P5, G5]
    assert loaded.pool == P5


def test_attempts_and_times_round_trip(subject: Subject) -> None:
    subject.store.create(job("a"))

    started = move(subject.store, "a", start, running, preempt, requeue, start)

    assert subject.store.get("a") == started
    assert [attempt.number for attempt in started.attempts] == [1, 2]
    assert started.attempts[0].outcome == "preempted"


def test_get_of_an_unknown_name_is_none(subject: Subject) -> None:
    assert subject.store.get("nobody") is None


@pytest.mark.parametrize("state", sorted(ACTIVE_STATES))
def test_create_refuses_the_name_of_an_unfinished_job(subject: Subject, state: JobState) -> None:
    first = put(subject.store, job("dup", minute=0), state)

    with pytest.raises(JobConflict) as raised:
        subject.store.create(job("dup", minute=5))

    assert raised.value.name == "dup"
    assert str(state) in raised.value.message
    assert subject.store.get("dup") == first


@pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
def test_create_takes_the_name_of_a_finished_job_and_keeps_that_job_by_its_id(
    subject: Subject, state: JobState
) -> None:
    first = put(subject.store, job("again", minute=0), state)
    second = job("again", minute=30, job_id="second-submission")

    created = subject.store.create(second)

    assert created == replace(second, version=1, earlier_job_ids=(first.job_id,))
    assert subject.store.get("again") == created
    assert subject.store.get("again", job_id="second-submission") == created
    assert subject.store.get("again", job_id=first.job_id) == first


def test_another_owners_resubmission_leaves_the_earlier_history_whole(subject: Subject) -> None:
    subject.store.create(job("shared-name", minute=0, owner=ALICE, job_id="alice-1"))
    alices = move(subject.store, "shared-name", start, running, preempt, requeue, start, running, complete)
    subject.store.create(job("shared-name", minute=60, owner=BOB, job_id="bob-2"))
    bobs = move(subject.store, "shared-name", cancel)
    carols = subject.store.create(job("shared-name", minute=90, job_id="carol-3"))

    assert subject.store.get("shared-name") == carols
    assert carols.earlier_job_ids == ("bob-2", "alice-1")
    assert subject.store.get("shared-name", job_id="bob-2") == bobs
    assert subject.store.get("shared-name", job_id="alice-1") == alices
    assert alices.owner == ALICE and [attempt.number for attempt in alices.attempts] == [1, 2]
    assert subject.store.get("shared-name", job_id="never-submitted") is None


@pytest.mark.parametrize("job_id", ["", "a#b", "x" * 65, "../etc", "id with spaces"])
def test_a_job_id_that_cannot_exist_is_not_found(subject: Subject, job_id: str) -> None:
    subject.store.create(job("a"))

    assert subject.store.get("a", job_id=job_id) is None


def test_earlier_jobs_are_listed_newest_first_up_to_the_bound(subject: Subject) -> None:
    for index in range(MAX_EARLIER_JOBS + 2):
        put(subject.store, job("daily", minute=index, job_id=f"run-{index}"), JobState.CANCELLED)

    latest = subject.store.get("daily")

    assert latest is not None
    assert latest.earlier_job_ids == tuple(f"run-{index}" for index in range(MAX_EARLIER_JOBS, 0, -1))
    assert subject.store.get("daily", job_id="run-0") is not None


def test_earlier_jobs_are_in_no_listing_and_no_queue(subject: Subject) -> None:
    put(subject.store, job("reused", priority=5, minute=0, job_id="old"), JobState.COMPLETED)
    put(subject.store, job("reused", priority=5, minute=1, job_id="older-still"), JobState.FAILED)
    put(subject.store, job("reused", priority=5, minute=2, job_id="newest"))
    put(subject.store, job("other", minute=3))

    listed = subject.store.list_jobs(states=list(JobState), limit=50)

    assert [(each.name, each.job_id) for each in listed.jobs] == [("reused", "newest"), ("other", other_id(subject))]
    assert [each.job_id for each in subject.store.active_jobs()] == ["newest", other_id(subject)]
    assert [each.job_id for each in subject.store.pending_in_pool(G5)] == ["newest", other_id(subject)]
    archived_item = subject.item(archive_key("reused", "old"))
    assert archived_item is not None
    assert "order_key" not in archived_item and "pending_pool" not in archived_item


def other_id(subject: Subject) -> str:
    other = subject.store.get("other")
    assert other is not None
    return other.job_id


def test_a_repeated_create_of_the_same_submission_returns_it(subject: Subject) -> None:
    """A client's retry after a timeout whose first try landed is its own job, not a conflict."""
    first = subject.store.create(job("once", job_id="same-submission"))
    moved = move(subject.store, "once", start)

    again = subject.store.create(job("once", job_id="same-submission"))

    assert again == moved
    assert first.version == 1


def test_of_two_resubmissions_of_a_finished_name_exactly_one_wins() -> None:
    """On the fake only: moto runs a transaction without isolation from other threads (it restores a
    copy of the whole table when one is cancelled), so it cannot show this. The DynamoDB store's side
    of the race is test_dynamodb_store.py's lost-race test."""
    store = InMemoryJobStore(ttl_days=TTL_DAYS)
    finished = put(store, job("contested", minute=0), JobState.COMPLETED)
    barrier = threading.Barrier(2)
    outcomes: dict[str, str] = {}

    def submit(job_id: str) -> None:
        barrier.wait()
        try:
            store.create(job("contested", minute=5, job_id=job_id))
        except JobConflict:
            outcomes[job_id] = "conflict"
        else:
            outcomes[job_id] = "created"

    threads = [threading.Thread(target=submit, args=(job_id,)) for job_id in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes.values()) == ["conflict", "created"]
    winner = store.get("contested")
    assert winner is not None and outcomes[winner.job_id] == "created"
    assert winner.earlier_job_ids == (finished.job_id,)
    assert store.get("contested", job_id=finished.job_id) == finished


# ------------------------------------------------------------------------ bounded items

LONG_REASON = "ResourceLimitExceeded: " + "the account-level service limit for ml.g5.xlarge was reached. " * 6
"""A refusal reason as long as SageMaker's usually are (about 400 characters)."""


def test_a_job_with_a_thousand_attempts_saves_loads_and_numbers_on(subject: Subject) -> None:
    created = subject.store.create(job("long-lived"))
    lived = attempted(created, 1000, start=NOW, reason=LONG_REASON)
    # 2,000 transitions made in memory, written as the one next version of the stored job.
    saved = subject.store.save(replace(lived, version=created.version + 1), expected_version=created.version)

    loaded = subject.store.get("long-lived")
    item = subject.item("long-lived")
    restarted = subject.store.save(start(saved), expected_version=saved.version)

    assert loaded == saved
    assert loaded.attempt_count == 1000
    assert len(loaded.attempts) == MAX_INLINE_ATTEMPTS
    assert loaded.attempt_outcomes == {"preempted": 500, "refused": 500}
    assert item is not None and item_size(item) < ITEM_LIMIT
    assert subject.store.get("long-lived") == restarted
    assert restarted.current_attempt is not None
    assert restarted.current_attempt.number == 1001
    assert restarted.current_attempt.training_job_name == attempt_name("long-lived", created.job_id, 1001)
    assert restarted.attempts[0].number == 1001 - MAX_INLINE_ATTEMPTS + 1


# ------------------------------------------------------------------------ conditional saves


def test_save_with_a_stale_version_conflicts_and_changes_nothing(subject: Subject) -> None:
    subject.store.create(job("a"))
    current = move(subject.store, "a", start)

    with pytest.raises(VersionConflict):
        subject.store.save(running(replace(current, version=1)), expected_version=1)

    assert subject.store.get("a") == current


def test_save_of_an_unknown_job_conflicts(subject: Subject) -> None:
    with pytest.raises(VersionConflict):
        subject.store.save(replace(job("ghost"), version=2), expected_version=1)

    assert subject.store.get("ghost") is None


def test_save_insists_on_the_next_version(subject: Subject) -> None:
    created = subject.store.create(job("a"))

    with pytest.raises(ValueError, match="version 2"):
        subject.store.save(replace(created, reason="no version bump"), expected_version=1)

    assert subject.store.get("a") == created


def test_of_two_writers_of_one_version_only_the_first_wins(subject: Subject) -> None:
    created = subject.store.create(job("a"))
    scheduler_view = subject.store.get("a")
    api_view = subject.store.get("a")
    assert scheduler_view is not None and api_view is not None

    started = subject.store.save(start(scheduler_view), expected_version=scheduler_view.version)
    with pytest.raises(VersionConflict):
        subject.store.save(cancel(api_view), expected_version=api_view.version)

    assert subject.store.get("a") == started
    assert started.version == created.version + 1


def test_concurrent_writers_on_threads_have_exactly_one_winner(subject: Subject) -> None:
    created = subject.store.create(job("a"))
    writers = 8
    barrier = threading.Barrier(writers)
    winners: list[int] = []
    losers: list[int] = []

    def write(index: int) -> None:
        barrier.wait()
        try:
            subject.store.save(lifecycle.explain(created, NOW, f"writer {index}"), expected_version=1)
        except VersionConflict:
            losers.append(index)
        else:
            winners.append(index)

    threads = [threading.Thread(target=write, args=(index,)) for index in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(winners) == 1
    assert len(losers) == writers - 1
    stored = subject.store.get("a")
    assert stored is not None
    assert stored.reason == f"writer {winners[0]}"
    assert stored.version == 2


def test_a_writer_holding_an_earlier_job_of_a_reused_name_conflicts(subject: Subject) -> None:
    old = subject.store.create(job("reused", minute=0))
    subject.store.save(cancel(old), expected_version=1)
    new = subject.store.create(job("reused", minute=10, job_id="new-submission"))

    with pytest.raises(VersionConflict):
        subject.store.save(start(old), expected_version=old.version)

    assert subject.store.get("reused") == new


# ------------------------------------------------------------------------ ordered reads


def test_active_jobs_are_every_pending_and_live_job_in_scheduling_order(subject: Subject) -> None:
    put(subject.store, job("low", priority=-5, minute=0))
    put(subject.store, job("high-late", priority=9, minute=3), JobState.RUNNING)
    put(subject.store, job("high-early", priority=9, minute=1), JobState.PREEMPTING)
    put(subject.store, job("tie-b", priority=2, minute=2), JobState.STARTING)
    put(subject.store, job("tie-a", priority=2, minute=2), JobState.STOPPING)
    put(subject.store, job("p5", priority=2, minute=1, pool=P5))
    put(subject.store, job("done", priority=100, minute=0), JobState.COMPLETED)
    put(subject.store, job("refused", priority=100, minute=0), JobState.FAILED)
    put(subject.store, job("gone", priority=100, minute=0), JobState.CANCELLED)

    active = subject.store.active_jobs()

    assert names(active) == ["high-early", "high-late", "p5", "tie-a", "tie-b", "low"]
    assert {each.state for each in active} == set(ACTIVE_STATES)
    assert active == [subject.store.get(name) for name in names(active)]


def test_active_jobs_of_an_empty_queue(subject: Subject) -> None:
    assert subject.store.active_jobs() == []


def test_pending_in_pool_lists_only_that_pools_pending_jobs_in_order(subject: Subject) -> None:
    for minute, (name, priority) in enumerate([("c", 0), ("a", 3), ("b", 3), ("d", -1), ("e", 0)]):
        put(subject.store, job(name, priority=priority, minute=minute))
    put(subject.store, job("other-pool", priority=50, pool=P5))
    put(subject.store, job("live", priority=50), JobState.RUNNING)

    assert names(subject.store.pending_in_pool(G5)) == ["a", "b", "c", "e", "d"]
    assert names(subject.store.pending_in_pool(P5)) == ["other-pool"]
    assert subject.store.pending_in_pool("ml.unknown") == []


def test_a_job_leaves_the_pending_index_when_it_starts_and_returns_in_its_old_place(subject: Subject) -> None:
    put(subject.store, job("first", minute=0))
    put(subject.store, job("second", minute=1))

    move(subject.store, "first", start, running)
    pending_while_running = names(subject.store.pending_in_pool(G5))
    item_while_running = subject.item("first")
    move(subject.store, "first", preempt, requeue)

    assert pending_while_running == ["second"]
    assert item_while_running is not None and "pending_pool" not in item_while_running
    assert names(subject.store.pending_in_pool(G5)) == ["first", "second"]
    assert (subject.item("first") or {}).get("pending_pool") == {"S": G5}


# ------------------------------------------------------------------------ list_jobs


@pytest.fixture(scope="module", params=STORES)
def listed(request: pytest.FixtureRequest) -> Subject:
    """Nine jobs: two owners, two pools, several states (read only, so shared by the module)."""
    subject = make_subject(request.param, request)
    put(subject.store, job("j1", priority=5, minute=0))
    put(subject.store, job("j2", priority=5, minute=1, owner=BOB))
    put(subject.store, job("j3", priority=1, minute=2, pool=P5), JobState.RUNNING)
    put(subject.store, job("j4", priority=9, minute=3), JobState.COMPLETED)
    put(subject.store, job("j5", priority=0, minute=4, owner=BOB, pool=P5))
    put(subject.store, job("j6", priority=0, minute=5), JobState.STARTING)
    put(subject.store, job("j7", priority=-2, minute=6, owner=BOB), JobState.CANCELLED)
    put(subject.store, job("j8", priority=3, minute=7))
    put(subject.store, job("j9", priority=3, minute=8, pool=P5, owner=BOB), JobState.FAILED)
    return subject


ALL = list(JobState)


@pytest.mark.parametrize(
    ("states", "pool", "owner", "expected"),
    [
        (ALL, None, None, ["j4", "j1", "j2", "j8", "j9", "j3", "j5", "j6", "j7"]),
        (sorted(ACTIVE_STATES), None, None, ["j1", "j2", "j8", "j3", "j5", "j6"]),
        ([JobState.PENDING], None, None, ["j1", "j2", "j8", "j5"]),
        ([JobState.PENDING], G5, None, ["j1", "j2", "j8"]),
        ([JobState.PENDING], G5, BOB, ["j2"]),
        (ALL, P5, None, ["j9", "j3", "j5"]),
        (ALL, None, BOB, ["j2", "j9", "j5", "j7"]),
        (ALL, P5, BOB, ["j9", "j5"]),
        ([JobState.RUNNING, JobState.STARTING], None, None, ["j3", "j6"]),
        ([JobState.STOPPING], None, None, []),
        ([], None, None, []),
    ],
)
def test_list_jobs_filters_and_keeps_scheduling_order(
    listed: Subject, states: list[JobState], pool: str | None, owner: str | None, expected: list[str]
) -> None:
    page = listed.store.list_jobs(states=states, pool=pool, owner=owner, limit=50)

    assert names(page.jobs) == expected
    assert page.next_token is None


@pytest.mark.parametrize("limit", [1, 2, 4, 8])
@pytest.mark.parametrize(
    ("states", "pool", "owner"), [(ALL, None, None), (ALL, None, BOB), ([JobState.PENDING], G5, None)]
)
def test_list_jobs_pages_cover_every_job_once_in_order(
    listed: Subject, limit: int, states: list[JobState], pool: str | None, owner: str | None
) -> None:
    everything = names(listed.store.list_jobs(states=states, pool=pool, owner=owner, limit=100).jobs)
    seen: list[str] = []
    token: str | None = None
    pages = 0

    while True:
        page = listed.store.list_jobs(states=states, pool=pool, owner=owner, limit=limit, next_token=token)
        pages += 1
        assert len(page.jobs) <= limit
        seen.extend(names(page.jobs))
        token = page.next_token
        if token is None:
            break
        assert len(page.jobs) == limit

    assert seen == everything
    assert pages == max(1, -(-len(everything) // limit))


def test_a_page_that_holds_the_rest_exactly_has_no_token(listed: Subject) -> None:
    page = listed.store.list_jobs(states=[JobState.PENDING], limit=4)

    assert names(page.jobs) == ["j1", "j2", "j8", "j5"]
    assert page.next_token is None


@pytest.mark.parametrize("limit", [0, -1])
def test_list_jobs_needs_a_positive_limit(listed: Subject, limit: int) -> None:
    with pytest.raises(ValueError, match="limit"):
        listed.store.list_jobs(states=ALL, limit=limit)


@pytest.mark.parametrize("token", ["not base64 at all!", "eyJ2IjoxfQ", "bnVsbA", "eyJ2IjoyLCJhZnRlciI6IngifQ"])
def test_list_jobs_rejects_a_token_it_did_not_issue(listed: Subject, token: str) -> None:
    with pytest.raises(InvalidRequest) as raised:
        listed.store.list_jobs(states=ALL, next_token=token)

    assert raised.value.field == "next_token"


# ------------------------------------------------------------------------ TTL


@pytest.mark.parametrize("state", sorted(ACTIVE_STATES))
def test_an_unfinished_job_never_expires(subject: Subject, state: JobState) -> None:
    put(subject.store, job("a"), state)

    item = subject.item("a")

    assert item is not None and "expires_at" not in item


@pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
def test_a_finished_job_expires_ttl_days_after_it_finished(subject: Subject, state: JobState) -> None:
    finished = put(subject.store, job("a"), state)

    item = subject.item("a")

    assert finished.updated_at is not None
    expected = int((finished.updated_at + timedelta(days=TTL_DAYS)).timestamp())
    assert item is not None
    assert item["expires_at"] == {"N": str(expected)}
    assert "pending_pool" not in item
