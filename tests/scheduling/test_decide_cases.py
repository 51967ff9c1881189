"""Table-driven cases of one pass: each names its queue, its pools and the actions it must produce.

Actions are compared as short lines: `start J`, `start J (backfill)`, `preempt J for H`, `wait J`
(an ExplainWait), in the order the pass decided them. Reasons have their own tests below.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import SchedulerConfig

from .builders import G5, NOW, P5, TRN, QueueBuilder, pools, queue


def summary(action: Action) -> str:
    match action:
        case StartJob(backfill=True):
            return f"start {action.job_name} (backfill)"
        case StartJob():
            return f"start {action.job_name}"
        case PreemptJob():
            return f"preempt {action.job_name} for {action.for_job}"
        case ExplainWait():
            return f"wait {action.job_name}"
    raise AssertionError(action)


@dataclass(frozen=True)
class Case:
    name: str
    config: SchedulerConfig
    queue: QueueBuilder
    expect: list[str]


CASES = [
    # The seed scenario, pass by pass: capacity 2; job1 p1, job2 p2, job3 p1, job4 p3 in that order.
    Case(
        "seed: job1 and job2 start",
        pools(p5=2),
        queue().pending("job1", 1).pending("job2", 2),
        ["start job2", "start job1"],
    ),
    Case(
        "seed: job3 waits, equal-priority job1 is not preempted",
        pools(p5=2),
        queue().running("job1", 1).running("job2", 2).pending("job3", 1),
        ["wait job3"],
    ),
    Case(
        "seed: job4 preempts job1, the lowest priority, not job2",
        pools(p5=2),
        queue().running("job1", 1).running("job2", 2).pending("job3", 1).pending("job4", 3),
        ["preempt job1 for job4", "wait job4"],
    ),
    Case(
        "seed: while job1 stops, nothing more is preempted",
        pools(p5=2),
        queue().preempting("job1", 1).running("job2", 2).pending("job3", 1).pending("job4", 3),
        ["wait job4"],
    ),
    Case(
        "seed: job1 stopped, job4 takes its instance",
        pools(p5=2),
        queue().pending("job1", 1, past_attempts=1).running("job2", 2).pending("job3", 1).pending("job4", 3),
        ["start job4", "wait job1"],
    ),
    Case(
        "seed: job2 completed, job1 resumes before job3 (earlier submission)",
        pools(p5=2),
        queue().pending("job1", 1, past_attempts=1).pending("job3", 1).running("job4", 3),
        ["start job1", "wait job3"],
    ),
    # Pools are independent.
    Case(
        "a waiting p5 head does not block a g5 job",
        pools(p5=1, g5=1),
        queue().running("hi", 5).pending("a", 0).pending("b", 0, {G5: 1}),
        ["wait a", "start b"],
    ),
    Case(
        "heads of two pools each preempt in their own pool",
        pools(p5=1, g5=1),
        queue().running("lo-p5", 0).running("lo-g5", 0, {G5: 1}).pending("hi-p5", 2).pending("hi-g5", 1, {G5: 1}),
        ["preempt lo-p5 for hi-p5", "wait hi-p5", "preempt lo-g5 for hi-g5", "wait hi-g5"],
    ),
    # Multi-instance jobs.
    Case(
        "a multi-instance job starts when its instances are free",
        pools(p5=4),
        queue().running("x", 0).pending("big", 1, {P5: 3}),
        ["start big"],
    ),
    Case(
        "a small job does not pass a waiting multi-instance head",
        pools(p5=4),
        queue().running("x", 5, {P5: 2}).pending("big", 1, {P5: 3}).pending("small", 0),
        ["wait big"],
    ),
    Case(
        "a multi-instance job is preempted whole",
        pools(p5=4),
        queue().running("a", 0, {P5: 2}).running("b", 0, {P5: 2}).pending("big", 1, {P5: 2}),
        ["preempt b for big", "wait big"],
    ),
    # Heterogeneous instance groups: a job fits only if every pool it names fits.
    Case(
        "a heterogeneous job starts when both pools fit",
        pools(p5=2, g5=2),
        queue().pending("het", 0, {P5: 1, G5: 2}),
        ["start het"],
    ),
    Case(
        "a heterogeneous job short in one pool heads both pools",
        pools(p5=2, g5=2),
        queue().running("g", 5, {G5: 2}).pending("het", 1, {P5: 1, G5: 1}).pending("later", 0),
        ["wait het"],
    ),
    Case(
        "a heterogeneous head preempts only in the pool it lacks",
        pools(p5=2, g5=2),
        queue().running("low-p5", 0).running("low-g5", 0, {G5: 2}).pending("het", 3, {P5: 1, G5: 1}),
        ["preempt low-g5 for het", "wait het"],
    ),
    # Capacity already being released.
    Case(
        "a preempting job's instances cover the head: no extra preemption",
        pools(p5=2),
        queue().preempting("low", 0).running("mid", 2).pending("hi", 3),
        ["wait hi"],
    ),
    Case(
        "a stopping (cancelled) job's instances count as released too",
        pools(p5=2),
        queue().stopping("gone", 0).running("low", 0).pending("hi", 3),
        ["wait hi"],
    ),
    Case(
        "only the part not already being released is preempted",
        pools(p5=3),
        queue().preempting("a", 0).running("b", 0).running("c", 5).pending("hi", 3, {P5: 2}),
        ["preempt b for hi", "wait hi"],
    ),
    Case(
        "a job still starting can be preempted",
        pools(p5=1),
        queue().starting("low", 0).pending("hi", 2),
        ["preempt low for hi", "wait hi"],
    ),
    # No room even after preempting everything lower.
    Case(
        "not enough lower-priority instances: nothing is preempted",
        pools(p5=3),
        queue().running("a", 1).running("b", 5, {P5: 2}).pending("h", 3, {P5: 3}),
        ["wait h"],
    ),
    # Jobs started outside the queue.
    Case(
        "external usage fills the pool",
        pools(p5=2),
        queue().running("a", 0).pending("b", 0).external(P5, 1),
        ["wait b"],
    ),
    Case(
        "without external usage the low job is enough to preempt",
        pools(p5=2),
        queue().running("low", 0).pending("hi", 2, {P5: 2}),
        ["preempt low for hi", "wait hi"],
    ),
    Case(
        "external usage counted: preempting the low job would not make room",
        pools(p5=2),
        queue().running("low", 0).pending("hi", 2, {P5: 2}).external(P5, 1),
        ["wait hi"],
    ),
    # Equal priorities.
    Case("equal priority is never preempted", pools(p5=1), queue().running("a", 2).pending("b", 2), ["wait b"]),
    # Candidate order: backfill first, lowest priority, least work lost, name.
    Case(
        "least work lost: the latest started is preempted",
        pools(p5=2),
        queue()
        .running("old", 0, started_at=NOW - timedelta(hours=5))
        .running("new", 0, started_at=NOW - timedelta(minutes=5))
        .pending("hi", 1),
        ["preempt new for hi", "wait hi"],
    ),
    Case(
        "lowest priority before least work lost",
        pools(p5=2),
        queue()
        .running("low", 0, started_at=NOW - timedelta(hours=5))
        .running("mid", 1, started_at=NOW - timedelta(minutes=5))
        .pending("hi", 2),
        ["preempt low for hi", "wait hi"],
    ),
    Case(
        "a backfilled job before a lower-priority one",
        pools(p5=2),
        queue().running("lo", 0).pending("hi", 5).running("bf", 3, backfill=True),
        ["preempt bf for hi", "wait hi"],
    ),
    Case(
        "minimal set: the small job greedy takes first is added back",
        pools(p5=4),
        queue().running("small", 0).running("big", 1, {P5: 3}).pending("head", 5, {P5: 3}),
        ["preempt big for head", "wait head"],
    ),
    # Backfill.
    Case(
        "backfill off: the lower job waits behind a head that cannot start",
        pools(p5=4),
        queue().running("hi", 5, {P5: 2}).pending("head", 3, {P5: 4}).pending("low", 1, {P5: 2}),
        ["wait head"],
    ),
    Case(
        "backfill on: the lower job runs on instances the head cannot use yet",
        pools(p5=4, backfill=True),
        queue().running("hi", 5, {P5: 2}).pending("head", 3, {P5: 4}).pending("low", 1, {P5: 2}),
        ["wait head", "start low (backfill)"],
    ),
    Case(
        "backfill on: once the head can start, the backfilled job is preempted first",
        pools(p5=4, backfill=True),
        queue().running("low", 0, {P5: 2}).running("bf", 1, {P5: 2}, backfill=True).pending("head", 3, {P5: 2}),
        ["preempt bf for head", "wait head"],
    ),
    Case(
        "a backfilled job is reclaimed by an earlier job of equal priority",
        pools(p5=2, backfill=True),
        queue().pending("head", 1, {P5: 2}).running("later", 1, backfill=True),
        ["preempt later for head", "wait head"],
    ),
    Case(
        "a backfilled job submitted before the head is not reclaimed at equal priority",
        pools(p5=2, backfill=True),
        queue().running("early", 1, backfill=True).pending("head", 1, {P5: 2}),
        ["wait head"],
    ),
    Case(
        "backfill never takes instances the head gets once stops land",
        pools(p5=4, backfill=True),
        queue().running("y", 5).preempting("x", 0).pending("head", 3, {P5: 3}).pending("low", 1),
        ["wait head"],
    ),
    Case(
        "backfill beside a heterogeneous head that lacks another pool",
        pools(p5=2, g5=2, backfill=True),
        queue().running("g", 5, {G5: 2}).pending("het", 3, {P5: 1, G5: 1}).pending("small", 0),
        ["wait het", "start small (backfill)"],
    ),
    # One bad job never blocks the queue.
    Case(
        "a job in start backoff is skipped and blocks nothing",
        pools(p5=1),
        queue().pending("a", 5, backoff_until=NOW + timedelta(minutes=1)).pending("b", 0),
        ["wait a", "start b"],
    ),
    Case(
        "a job whose backoff has passed is considered again",
        pools(p5=1),
        queue().pending("a", 5, backoff_until=NOW - timedelta(seconds=1)).pending("b", 0),
        ["start a", "wait b"],
    ),
    Case(
        "a job larger than its pool is explained and blocks nothing",
        pools(p5=2),
        queue().pending("huge", 5, {P5: 4}).pending("small", 0),
        ["wait huge", "start small"],
    ),
    Case(
        "a job on an unpooled type under reject is explained and blocks nothing",
        pools(p5=1),
        queue().pending("trn", 5, {TRN: 1}).pending("small", 0),
        ["wait trn", "start small"],
    ),
    # Unpooled types under `unlimited`.
    Case(
        "an unpooled type under unlimited always fits",
        pools(p5=1, unlimited=True),
        queue().pending("trn", 0, {TRN: 100}),
        ["start trn"],
    ),
    Case(
        "an unlimited pool is never blocked",
        pools(p5=1, unlimited=True),
        queue().running("x", 9).pending("het", 3, {P5: 1, TRN: 1}).pending("t", 0, {TRN: 1}),
        ["wait het", "start t"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_decide(case: Case) -> None:
    actions = decide(case.queue.build(), NOW, case.config)

    assert [summary(action) for action in actions] == case.expect
