"""The JobStore contract for team fronts (`pending_front(..., team=)`, `count_pending(..., team=)`),
run against the in-memory fake and the DynamoDB store on moto (the pending-by-team index of
template.yaml), and what a team's job stores."""

from __future__ import annotations

from dataclasses import replace

import pytest
from smq_lambda.adapters.item_codec import job_order_key
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState

from tests.adapters.builders import G5, P5, job
from tests.adapters.job_store_contract.subjects import (
    STORES,
    Subject,
    make_subject,
    move,
    names,
    preempt,
    put,
    requeue,
    running,
    start,
)


@pytest.fixture(params=STORES)
def subject(request: pytest.FixtureRequest) -> Subject:
    return make_subject(request.param, request)


def of(name: str, team: str | None, *, minute: int, priority: int = 0, pool: str = G5) -> Job:
    return replace(
        job(name, priority=priority, minute=minute, pool=pool),
        team=team,
        expected_duration_s=5400 if team else None,
        max_runtime_s=3600,
        family="vit-base" if team else None,
    )


def test_a_team_front_lists_only_that_teams_pending_jobs_of_the_pool_in_order(subject: Subject) -> None:
    put(subject.store, of("a-late", "a", minute=5))
    put(subject.store, of("a-high", "a", minute=6, priority=9))
    put(subject.store, of("b-first", "b", minute=1))
    put(subject.store, of("untagged", None, minute=2))
    put(subject.store, of("a-other-pool", "a", minute=0, pool=P5))
    put(subject.store, of("a-running", "a", minute=0), JobState.RUNNING)
    put(subject.store, of("a-done", "a", minute=0), JobState.COMPLETED)

    assert names(subject.store.pending_front(G5, 10, team="a")) == ["a-high", "a-late"]
    assert names(subject.store.pending_front(G5, 10, team="b")) == ["b-first"]
    assert names(subject.store.pending_front(G5, 10, team="")) == ["untagged"]
    assert names(subject.store.pending_front(P5, 10, team="a")) == ["a-other-pool"]
    assert subject.store.pending_front(G5, 10, team="nobody") == []
    assert names(subject.store.pending_front(G5, 10)) == ["a-high", "b-first", "untagged", "a-late"]


@pytest.mark.parametrize("limit", [0, 1, 2, 3])
def test_a_team_front_reads_at_most_limit_jobs(subject: Subject, limit: int) -> None:
    for minute in range(3):
        put(subject.store, of(f"b{minute}", "b", minute=minute))
        put(subject.store, of(f"a{minute}", "a", minute=minute))

    assert names(subject.store.pending_front(G5, limit, team="a")) == [f"a{index}" for index in range(limit)]


def test_a_team_front_holds_summaries_with_the_team_and_durations(subject: Subject) -> None:
    stored = put(subject.store, of("summary", "vision", minute=0))

    (summary,) = subject.store.pending_front(G5, 10, team="vision")
    (by_pool,) = subject.store.pending_front(G5, 10)

    assert summary == by_pool == stored
    assert (summary.team, summary.expected_duration_s, summary.max_runtime_s, summary.family) == (
        "vision",
        5400,
        3600,
        "vit-base",
    )
    assert summary.request == {}


def test_a_job_leaves_its_team_front_while_live_and_returns_when_requeued(subject: Subject) -> None:
    put(subject.store, of("first", "a", minute=0))
    put(subject.store, of("second", "a", minute=1))

    move(subject.store, "first", start, running)
    while_running = names(subject.store.pending_front(G5, 10, team="a"))
    item_while_running = subject.item("first") or {}
    move(subject.store, "first", preempt, requeue)

    assert while_running == ["second"]
    assert "pending_team" not in item_while_running and item_while_running["team"] == {"S": "a"}
    assert names(subject.store.pending_front(G5, 10, team="a")) == ["first", "second"]


def test_count_pending_counts_one_team_between_its_bounds(subject: Subject) -> None:
    keys = {}
    for minute in range(5):
        keys[f"a{minute}"] = job_order_key(put(subject.store, of(f"a{minute}", "a", minute=minute)))
        put(subject.store, of(f"b{minute}", "b", minute=minute))
    put(subject.store, of("untagged", None, minute=9))

    assert subject.store.count_pending(G5, team="a") == 5
    assert subject.store.count_pending(G5, team="") == 1
    assert subject.store.count_pending(G5) == 11
    assert subject.store.count_pending(G5, after=keys["a0"], team="a") == 4
    assert subject.store.count_pending(G5, before=keys["a3"], team="a") == 3
    assert subject.store.count_pending(G5, after=keys["a0"], before=keys["a4"], team="a") == 3
    assert subject.store.count_pending(G5, after=keys["a2"], before=keys["a2"], team="a") == 0
    assert subject.store.count_pending(P5, team="a") == 0
