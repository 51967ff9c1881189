"""The JobStore contract: create and get, names taken again once a job finished, earlier jobs
kept by id, and items bounded however many attempts a job has."""

from __future__ import annotations

import re
import threading
from dataclasses import replace

import pytest
from smq_lambda.adapters.item_codec import archive_key
from smq_lambda.domain.jobs.model import MAX_EARLIER_JOBS, MAX_INLINE_ATTEMPTS
from smq_lambda.domain.jobs.states import ACTIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import JobConflict

from tests.adapters.bounds import ITEM_LIMIT, attempted, item_size
from tests.adapters.builders import ALICE, BOB, G5, P5, job
from tests.adapters.job_store_contract.subjects import (
    NOW,
    TTL_DAYS,
    Subject,
    cancel,
    complete,
    move,
    preempt,
    put,
    requeue,
    running,
    start,
)
from tests.support.fakes import InMemoryJobStore


def test_create_stores_version_one_and_get_returns_it_exactly(subject: Subject) -> None:
    submitted = job("hetero", priority=7, groups=[(P5, 2), (G5, 4)], tags=[{"Key": "team", "Value": "vision é"}])

    created = subject.store.create(submitted)
    loaded = subject.store.get("hetero")

    assert created == replace(submitted, version=1)
    assert loaded == created
    assert loaded is not None
    assert loaded.request == submitted.request
    assert list(loaded.demand) == [P5, G5]
    assert loaded.where.pool == P5


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
    assert [each.job_id for each in subject.store.pending_front(G5, 10)] == ["newest", other_id(subject)]
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
    of the race is dynamodb_store/test_create.py's lost-race test."""
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
