"""One contract for every JobStore: the in-memory fake and the DynamoDB store on moto.

The DynamoDB store reads two items per Query page here, so every listing crosses page boundaries.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import pytest
from moto.dynamodb.models import DynamoDBBackend
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import archive_key, job_order_key
from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import MAX_EARLIER_JOBS, MAX_INLINE_ATTEMPTS, Job
from smq_lambda.domain.states import ACTIVE_STATES, LIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import InvalidRequest, JobConflict, VersionConflict
from smq_lambda.governance.spot import on_demand_request
from smq_lambda.ports import InUse, JobStore

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
    assert subject.store.in_use().live == []
    assert [each.job_id for each in subject.store.pending_window(G5, 10)] == ["newest", other_id(subject)]
    assert subject.store.count_pending(G5) == 2
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
    assert loaded is not None and loaded.request == created.request
    assert loaded.attempt_count == 1000
    assert len(loaded.attempts) == MAX_INLINE_ATTEMPTS
    assert loaded.attempt_outcomes == {"preempted": 500, "refused": 500}
    assert item is not None and item_size(item) < ITEM_LIMIT
    assert subject.store.get("long-lived") == restarted
    assert restarted.current_attempt is not None
    assert restarted.current_attempt.number == 1001
    assert re.fullmatch(r"long-lived-[0-9a-f]{12}-1001", restarted.current_attempt.training_job_name)
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


@pytest.fixture
def atomic_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB applies each write atomically: its condition is checked and the item changed as one
    step. moto checks and then changes, and another thread's write can land in between, so the
    concurrency tests serialize moto's writes as DynamoDB would (the in-memory store locks itself)."""
    lock = threading.RLock()

    def atomic(write: Callable[..., Any]) -> Callable[..., Any]:
        def locked(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return write(*args, **kwargs)

        return locked

    for operation in ("put_item", "update_item", "transact_write_items"):
        monkeypatch.setattr(DynamoDBBackend, operation, atomic(getattr(DynamoDBBackend, operation)))


@pytest.mark.usefixtures("atomic_moto")
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


@pytest.mark.usefixtures("atomic_moto")
def test_concurrent_writers_of_a_starting_job_leave_it_live_exactly_when_the_winner_did(subject: Subject) -> None:
    """Half the writers confirm the start (live), half report a refusal (pending): one wins, and the
    job is among the live ones exactly when the winner's state is live."""
    subject.store.create(job("a", groups=[(G5, 1), (P5, 2)]))
    starting = move(subject.store, "a", start)
    writers = 8
    barrier = threading.Barrier(writers)
    outcomes = [
        running(starting) if index % 2 else lifecycle.refuse_start(starting, NOW, reason="x", lasting=False)
        for index in range(writers)
    ]
    winners: list[int] = []
    losers: list[int] = []

    def write(index: int) -> None:
        barrier.wait()
        try:
            subject.store.save(outcomes[index], expected_version=starting.version)
        except VersionConflict:
            losers.append(index)
        else:
            winners.append(index)

    threads = [threading.Thread(target=write, args=(index,)) for index in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(winners) == 1 and len(losers) == writers - 1
    stored = subject.store.get("a")
    assert stored == outcomes[winners[0]]
    assert subject.store.in_use().live == ([stored] if stored.is_live else [])


def test_a_save_that_changes_the_request_keeps_the_new_one(subject: Subject) -> None:
    """A managed-spot job interrupted too often waits again with its on-demand request, "which
    replaces the stored request for good" (lifecycle.fall_back_to_on_demand)."""
    spot_request = {
        **job("spot").request,
        "EnableManagedSpotTraining": True,
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200},
    }
    subject.store.create(replace(job("spot"), request=spot_request))
    on_demand = on_demand_request(spot_request)

    fell_back = move(
        subject.store,
        "spot",
        start,
        running,
        lambda current: lifecycle.fall_back_to_on_demand(current, NOW, request=on_demand, reason="interrupted"),
    )

    stored = subject.store.get("spot")
    assert fell_back.request == on_demand
    assert stored == fell_back
    assert stored is not None and stored.request == on_demand


def test_a_writer_holding_an_earlier_job_of_a_reused_name_conflicts(subject: Subject) -> None:
    old = subject.store.create(job("reused", minute=0))
    subject.store.save(cancel(old), expected_version=1)
    new = subject.store.create(job("reused", minute=10, job_id="new-submission"))

    with pytest.raises(VersionConflict):
        subject.store.save(start(old), expected_version=old.version)

    assert subject.store.get("reused") == new


# ------------------------------------------------------------------------ in_use: the live jobs


def test_in_use_is_exactly_the_live_jobs_in_scheduling_order(subject: Subject) -> None:
    put(subject.store, job("low", priority=-5, minute=0))
    put(subject.store, job("high-late", priority=9, minute=3), JobState.RUNNING)
    put(subject.store, job("high-early", priority=9, minute=1), JobState.PREEMPTING)
    put(subject.store, job("tie-b", priority=2, minute=2), JobState.STARTING)
    put(subject.store, job("tie-a", priority=2, minute=2), JobState.STOPPING)
    put(subject.store, job("p5", priority=2, minute=1, pool=P5))
    put(subject.store, job("done", priority=100, minute=0), JobState.COMPLETED)
    put(subject.store, job("refused", priority=100, minute=0), JobState.FAILED)
    put(subject.store, job("gone", priority=100, minute=0), JobState.CANCELLED)

    live = subject.store.in_use().live

    assert names(live) == ["high-early", "high-late", "tie-a", "tie-b"]
    assert {each.state for each in live} == set(LIVE_STATES)
    assert live == [subject.store.get(name) for name in names(live)]


def test_in_use_of_an_empty_queue(subject: Subject) -> None:
    assert subject.store.in_use() == InUse(live=[], outside={}, pools=frozenset())


def test_live_jobs_are_read_whole(subject: Subject) -> None:
    """A live job comes with its request and history: reconciliation and stops act on it."""
    subject.store.create(job("whole", tags=[{"Key": "team", "Value": "vision"}]))
    reprioritized = move(subject.store, "whole", lambda current: lifecycle.reprioritize(current, NOW, 4, by=BOB))
    live_job = move(subject.store, "whole", start, running)

    (live,) = subject.store.in_use().live

    assert live == live_job
    assert live.request == reprioritized.request and live.request["Tags"] == [{"Key": "team", "Value": "vision"}]
    assert live.history == reprioritized.history != ()


ENDINGS: dict[str, list[Step]] = {
    "preempted and requeued": [start, running, preempt, requeue],
    "completed": [start, running, complete],
    "cancelled while running": [start, running, stop, lambda current: lifecycle.end_stopped(current, NOW)],
    "refused for a while": [start, lambda current: lifecycle.refuse_start(current, NOW, reason="x", lasting=False)],
    "refused for good": [start, refuse],
    "failed and retried": [start, running, lambda current: lifecycle.retry_failed(current, NOW, reason="x")],
    "stopped for an idle GPU": [
        start,
        running,
        lambda current: lifecycle.stop_for_governance(current, NOW, outcome="idle-gpu", reason="idle GPU"),
        lambda current: lifecycle.end_stopped(current, NOW),
    ],
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_a_job_leaves_in_use_when_it_ends_or_returns_to_pending(subject: Subject, ending: str) -> None:
    subject.store.create(job("mover", minute=0))
    put(subject.store, job("stays", minute=1), JobState.RUNNING)
    *before, last = ENDINGS[ending]
    live_before = move(subject.store, "mover", *before)

    was_live = names(subject.store.in_use().live)
    ended = move(subject.store, "mover", last)

    assert live_before.is_live and not ended.is_live
    assert was_live == ["mover", "stays"]
    assert names(subject.store.in_use().live) == ["stays"]
    assert names(subject.store.pending_window(G5, 10)) == (["mover"] if ended.state is JobState.PENDING else [])


def test_a_requeued_job_is_live_again_when_it_starts_again(subject: Subject) -> None:
    subject.store.create(job("again"))
    move(subject.store, "again", start, running, preempt, requeue)

    restarted = move(subject.store, "again", start)

    assert subject.store.in_use().live == [restarted]
    assert restarted.current_attempt is not None and restarted.current_attempt.number == 2


def test_a_heterogeneous_job_holds_every_pool_it_needs_and_waits_under_its_first(subject: Subject) -> None:
    subject.store.create(job("hetero", groups=[(P5, 2), (G5, 1)]))
    running_job = move(subject.store, "hetero", start, running)

    held = subject.store.in_use()
    requeued = move(subject.store, "hetero", preempt, requeue)

    assert held.live == [running_job]
    assert held.live[0].demand == {P5: 2, G5: 1}
    assert held.pools == {P5, G5}
    assert subject.store.in_use().live == []
    assert names(subject.store.pending_window(P5, 10)) == ["hetero"]
    assert subject.store.pending_window(G5, 10) == []
    assert requeued.state is JobState.PENDING


def test_pools_are_every_pool_a_job_was_submitted_to_and_stay(subject: Subject) -> None:
    put(subject.store, job("hetero", groups=[(P5, 2), ("ml.trn1.32xlarge", 1)]), JobState.COMPLETED)
    put(subject.store, job("plain"), JobState.CANCELLED)

    assert subject.store.in_use().pools == {P5, "ml.trn1.32xlarge", G5}


# ------------------------------------------------------------------------ in_use: outside the queue


def test_an_outside_job_holds_its_instances_until_it_ends(subject: Subject) -> None:
    subject.store.record_outside("by-hand", {G5: 2}, holding=True)
    subject.store.record_outside("cluster", {P5: 4, G5: 1}, holding=True)
    both = subject.store.in_use()
    subject.store.record_outside("by-hand", {G5: 2}, holding=False)

    assert both.outside == {G5: 3, P5: 4}
    assert both.pools == {G5, P5}
    assert subject.store.in_use().outside == {G5: 1, P5: 4}
    assert subject.store.in_use().live == []


def test_duplicate_and_late_outside_events_are_harmless(subject: Subject) -> None:
    for _ in range(3):
        subject.store.record_outside("by-hand", {G5: 2}, holding=True)
    held = subject.store.in_use().outside
    for _ in range(2):
        subject.store.record_outside("by-hand", {G5: 2}, holding=False)
    subject.store.record_outside("never-seen", {P5: 1}, holding=False)

    assert held == {G5: 2}
    assert subject.store.in_use().outside == {}


def test_replace_outside_replaces_what_the_events_recorded(subject: Subject) -> None:
    subject.store.record_outside("ended-unseen", {G5: 2}, holding=True)
    subject.store.record_outside("still-running", {P5: 1}, holding=True)

    subject.store.replace_outside({"still-running": {P5: 1}, "missed-start": {G5: 3, "ml.c5.xlarge": 2}})
    replaced = subject.store.in_use()
    subject.store.replace_outside({})

    assert replaced.outside == {P5: 1, G5: 3, "ml.c5.xlarge": 2}
    assert replaced.pools == {G5, P5, "ml.c5.xlarge"}
    assert subject.store.in_use().outside == {}
    assert subject.store.in_use().pools == {G5, P5, "ml.c5.xlarge"}


def test_outside_jobs_and_live_jobs_are_counted_apart(subject: Subject) -> None:
    running_job = put(subject.store, job("ours", instances=2), JobState.RUNNING)

    subject.store.record_outside("theirs", {G5: 3}, holding=True)

    assert subject.store.in_use() == InUse(live=[running_job], outside={G5: 3}, pools=frozenset({G5}))


def test_usage_records_are_no_jobs(subject: Subject) -> None:
    put(subject.store, job("ours"), JobState.RUNNING)
    put(subject.store, job("waits", minute=1))
    subject.store.record_outside("theirs", {G5: 3, P5: 1}, holding=True)
    subject.store.replace_outside({"theirs": {G5: 3, P5: 1}})

    assert names(subject.store.list_jobs(states=ALL, limit=50).jobs) == ["ours", "waits"]
    assert names(subject.store.pending_window(G5, 10)) == ["waits"]
    assert subject.store.count_pending(G5) == 1
    assert subject.store.pending_window(P5, 10) == []


# ------------------------------------------------------------------------ pending_window

JOBS_5 = [f"j{index}" for index in range(5)]


def test_pending_window_lists_only_that_pools_pending_jobs_in_order(subject: Subject) -> None:
    for minute, (name, priority) in enumerate([("c", 0), ("a", 3), ("b", 3), ("d", -1), ("e", 0)]):
        put(subject.store, job(name, priority=priority, minute=minute))
    put(subject.store, job("other-pool", priority=50, pool=P5))
    put(subject.store, job("live", priority=50), JobState.RUNNING)
    put(subject.store, job("done", priority=50), JobState.COMPLETED)

    assert names(subject.store.pending_window(G5, 10)) == ["a", "b", "c", "e", "d"]
    assert names(subject.store.pending_window(P5, 10)) == ["other-pool"]
    assert subject.store.pending_window("ml.unknown", 10) == []


@pytest.mark.parametrize(("limit", "expected"), [(0, []), (1, ["j0"]), (3, ["j0", "j1", "j2"]), (5, JOBS_5)])
def test_pending_window_reads_at_most_limit_jobs(subject: Subject, limit: int, expected: list[str]) -> None:
    for minute, name in enumerate(JOBS_5):
        put(subject.store, job(name, minute=minute))

    assert names(subject.store.pending_window(G5, limit)) == expected
    assert names(subject.store.pending_window(G5, limit + 10)) == JOBS_5


def test_a_job_leaves_the_pending_window_when_it_starts_and_returns_in_its_old_place(subject: Subject) -> None:
    put(subject.store, job("first", minute=0))
    put(subject.store, job("second", minute=1))

    move(subject.store, "first", start, running)
    pending_while_running = names(subject.store.pending_window(G5, 10))
    item_while_running = subject.item("first")
    move(subject.store, "first", preempt, requeue)

    assert pending_while_running == ["second"]
    assert item_while_running is not None and "pending_pool" not in item_while_running
    assert names(subject.store.pending_window(G5, 10)) == ["first", "second"]
    assert (subject.item("first") or {}).get("pending_pool") == {"S": G5}


def test_a_reprioritized_job_moves_in_the_window(subject: Subject) -> None:
    for minute, name in enumerate(JOBS_5):
        put(subject.store, job(name, minute=minute))

    move(subject.store, "j3", lambda current: lifecycle.reprioritize(current, NOW, 1, by=ALICE))

    assert names(subject.store.pending_window(G5, 2)) == ["j3", "j0"]


def test_the_window_holds_summaries_with_what_a_decision_reads_but_no_request_or_history(subject: Subject) -> None:
    """A job that has lived: earlier attempts, a refusal in backoff, a new priority, an earlier job
    of its name. Its summary is the job but for the request, the history and the counts of attempts
    no longer kept in full (a pass reads the whole job by key before it writes)."""
    put(subject.store, job("lived", minute=0, job_id="earlier"), JobState.CANCELLED)
    created = subject.store.create(job("lived", priority=2, minute=1, groups=[(G5, 2), (P5, 1)], job_id="now"))
    lived = attempted(created, MAX_INLINE_ATTEMPTS + 3, start=NOW)
    lived = subject.store.save(replace(lived, version=created.version + 1), expected_version=created.version)
    lived = move(
        subject.store,
        "lived",
        lambda current: lifecycle.reprioritize(current, NOW, 5, by=BOB),
        start,
        lambda current: lifecycle.refuse_start(current, NOW, reason="CapacityError: none", lasting=False),
    )

    (summary,) = subject.store.pending_window(G5, 10)

    assert lived.request and lived.history and lived.earlier_outcomes and lived.earlier_job_ids == ("earlier",)
    assert summary == replace(lived, history=(), earlier_outcomes={}, earlier_job_ids=())
    assert summary.request == {}
    assert summary.not_before is not None and summary.not_before == lived.not_before
    assert summary.start_failures == 1
    assert summary.next_attempt_number == lived.next_attempt_number == MAX_INLINE_ATTEMPTS + 5
    assert summary.demand == {G5: 2, P5: 1} and summary.pool == G5
    assert summary.order == lived.order
    whole = subject.store.get("lived")
    assert whole == lived and whole is not None and whole.request == lived.request


# ------------------------------------------------------------------------ count_pending


@pytest.fixture(scope="module", params=STORES)
def counted(request: pytest.FixtureRequest) -> tuple[Subject, dict[str, str]]:
    """Five pending G5 jobs j0..j4 in that order, with a running, a finished and a P5 job beside
    them (read only, so shared by the module); and every G5 job's order key."""
    subject = make_subject(request.param, request)
    for minute, name in enumerate(JOBS_5):
        put(subject.store, job(name, minute=minute))
    put(subject.store, job("running", minute=2), JobState.RUNNING)
    put(subject.store, job("finished", minute=2), JobState.COMPLETED)
    put(subject.store, job("p5", minute=2, pool=P5))
    keys = {}
    for name in [*JOBS_5, "running"]:
        found = subject.store.get(name)
        assert found is not None
        keys[name] = job_order_key(found)
    return subject, keys


@pytest.mark.parametrize(
    ("after", "before", "expected"),
    [
        (None, None, 5),
        ("j0", None, 4),
        ("j3", None, 1),
        ("j4", None, 0),
        (None, "j0", 0),
        (None, "j1", 1),
        (None, "j4", 4),
        ("j0", "j4", 3),
        ("j1", "j3", 1),
        ("j1", "j2", 0),
        ("j2", "j2", 0),
        ("running", None, 2),
        (None, "running", 3),
        ("j0", "running", 2),
        ("running", "j4", 1),
    ],
)
def test_count_pending_counts_strictly_between_its_bounds(
    counted: tuple[Subject, dict[str, str]], after: str | None, before: str | None, expected: int
) -> None:
    """`running` shares its minute with j2 and sorts right after it: a bound that is no pending job."""
    subject, keys = counted

    count = subject.store.count_pending(
        G5, after=None if after is None else keys[after], before=None if before is None else keys[before]
    )

    assert count == expected


def test_count_pending_counts_one_pool(counted: tuple[Subject, dict[str, str]]) -> None:
    subject, _ = counted

    assert subject.store.count_pending(P5) == 1
    assert subject.store.count_pending("ml.unknown") == 0


def test_count_pending_follows_the_queue(subject: Subject) -> None:
    for minute, name in enumerate(JOBS_5):
        put(subject.store, job(name, minute=minute))

    move(subject.store, "j0", start)
    move(subject.store, "j1", cancel)
    requeued = move(subject.store, "j2", start, running, preempt, requeue)

    assert subject.store.count_pending(G5) == 3
    assert subject.store.count_pending(G5, before=job_order_key(requeued)) == 0


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
