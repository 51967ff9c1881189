"""The JobStore contract: `pending_front` and `count_pending`."""

from __future__ import annotations

from dataclasses import replace

import pytest
from smq_lambda.adapters.item_codec import job_order_key
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import MAX_INLINE_ATTEMPTS
from smq_lambda.domain.jobs.states import JobState

from tests.adapters.bounds import attempted
from tests.adapters.builders import ALICE, BOB, G5, P5, job
from tests.adapters.job_store_contract.subjects import (
    NOW,
    STORES,
    Subject,
    cancel,
    make_subject,
    move,
    names,
    preempt,
    put,
    requeue,
    running,
    start,
)

JOBS_5 = [f"j{index}" for index in range(5)]


def test_pending_front_lists_only_that_pools_pending_jobs_in_order(subject: Subject) -> None:
    for minute, (name, priority) in enumerate([("c", 0), ("a", 3), ("b", 3), ("d", -1), ("e", 0)]):
        put(subject.store, job(name, priority=priority, minute=minute))
    put(subject.store, job("other-pool", priority=50, pool=P5))
    put(subject.store, job("live", priority=50), JobState.RUNNING)
    put(subject.store, job("done", priority=50), JobState.COMPLETED)

    assert names(subject.store.pending_front(G5, 10)) == ["a", "b", "c", "e", "d"]
    assert names(subject.store.pending_front(P5, 10)) == ["other-pool"]
    assert subject.store.pending_front("ml.unknown", 10) == []


@pytest.mark.parametrize(("limit", "expected"), [(0, []), (1, ["j0"]), (3, ["j0", "j1", "j2"]), (5, JOBS_5)])
def test_pending_front_reads_at_most_limit_jobs(subject: Subject, limit: int, expected: list[str]) -> None:
    for minute, name in enumerate(JOBS_5):
        put(subject.store, job(name, minute=minute))

    assert names(subject.store.pending_front(G5, limit)) == expected
    assert names(subject.store.pending_front(G5, limit + 10)) == JOBS_5


def test_a_job_leaves_the_pending_front_when_it_starts_and_returns_in_its_old_place(subject: Subject) -> None:
    put(subject.store, job("first", minute=0))
    put(subject.store, job("second", minute=1))

    move(subject.store, "first", start, running)
    pending_while_running = names(subject.store.pending_front(G5, 10))
    item_while_running = subject.item("first")
    move(subject.store, "first", preempt, requeue)

    assert pending_while_running == ["second"]
    assert item_while_running is not None and "pending_pool" not in item_while_running
    assert names(subject.store.pending_front(G5, 10)) == ["first", "second"]
    assert (subject.item("first") or {}).get("pending_pool") == {"S": G5}


def test_a_reprioritized_job_moves_in_the_front(subject: Subject) -> None:
    for minute, name in enumerate(JOBS_5):
        put(subject.store, job(name, minute=minute))

    move(subject.store, "j3", lambda current: lifecycle.reprioritize(current, NOW, 1, by=ALICE))

    assert names(subject.store.pending_front(G5, 2)) == ["j3", "j0"]


def test_the_front_holds_summaries_with_what_a_decision_reads_but_no_request_or_history(subject: Subject) -> None:
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

    (summary,) = subject.store.pending_front(G5, 10)

    assert lived.request and lived.history and lived.earlier_outcomes and lived.earlier_job_ids == ("earlier",)
    assert summary == replace(lived, history=(), earlier_outcomes={}, earlier_job_ids=())
    assert summary.request == {}
    assert summary.not_before is not None and summary.not_before == lived.not_before
    assert summary.start_failures == 1
    assert summary.next_attempt_number == lived.next_attempt_number == MAX_INLINE_ATTEMPTS + 5
    assert summary.demand == {G5: 2, P5: 1} and summary.where.pool == G5
    assert summary.order == lived.order
    whole = subject.store.get("lived")
    assert whole == lived and whole is not None and whole.request == lived.request


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
