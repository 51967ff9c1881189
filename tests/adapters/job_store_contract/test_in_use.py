"""The JobStore contract: `in_use`, the live jobs and the instances held outside the queue."""

from __future__ import annotations

import pytest
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.states import LIVE_STATES, JobState
from smq_lambda.ports import InUse

from tests.adapters.builders import BOB, G5, P5, job
from tests.adapters.job_store_contract.subjects import (
    ALL,
    NOW,
    Step,
    Subject,
    complete,
    move,
    names,
    preempt,
    put,
    refuse,
    requeue,
    running,
    start,
    stop,
)


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
    assert names(subject.store.pending_front(G5, 10)) == (["mover"] if ended.state is JobState.PENDING else [])


def test_a_requeued_job_is_live_again_when_it_starts_again(subject: Subject) -> None:
    subject.store.create(job("again"))
    move(subject.store, "again", start, running, preempt, requeue)

    restarted = move(subject.store, "again", start)

    assert subject.store.in_use().live == [restarted]
    assert restarted.current_attempt is not None and restarted.current_attempt.number == 2


def test_a_heterogeneous_job_holds_every_pool_it_needs_and_waits_in_each(subject: Subject) -> None:
    subject.store.create(job("hetero", groups=[(P5, 2), (G5, 1)]))
    running_job = move(subject.store, "hetero", start, running)

    held = subject.store.in_use()
    requeued = move(subject.store, "hetero", preempt, requeue)

    assert held.live == [running_job]
    assert held.live[0].demand == {P5: 2, G5: 1}
    assert held.pools == {P5, G5}
    assert subject.store.in_use().live == []
    assert subject.store.pending_front(P5, 10) == subject.store.pending_front(G5, 10) == [requeued]
    assert requeued.state is JobState.PENDING


def test_pools_are_every_pool_a_job_was_submitted_to_and_stay(subject: Subject) -> None:
    put(subject.store, job("hetero", groups=[(P5, 2), ("ml.trn1.32xlarge", 1)]), JobState.COMPLETED)
    put(subject.store, job("plain"), JobState.CANCELLED)

    assert subject.store.in_use().pools == {P5, "ml.trn1.32xlarge", G5}


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
    assert names(subject.store.pending_front(G5, 10)) == ["waits"]
    assert subject.store.count_pending(G5) == 1
    assert subject.store.pending_front(P5, 10) == []
