"""The reasons users read, attempt numbers, and explanations written only when they change."""

from __future__ import annotations

from datetime import timedelta

import pytest
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.scheduling import reasons
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.decide import decide

from .builders import G5, NOW, P5, TRN, apply, pools, queue


def reason_of(actions: list[Action], name: str) -> str:
    return next(action.reason for action in actions if action.job_name == name)


@pytest.mark.parametrize(
    ("builder", "config", "job", "expected"),
    [
        (
            queue().running("a").pending("b", 0, {G5: 1}),
            pools(p5=2, g5=2),
            "b",
            "fits: needs 1, 2 of 2 ml.g5.xlarge instances free",
        ),
        (
            queue().pending("het", 0, {P5: 1, G5: 2}),
            pools(p5=2, g5=2),
            "het",
            "fits: needs 1, 2 of 2 ml.p5.48xlarge instances free; needs 2, 2 of 2 ml.g5.xlarge instances free",
        ),
        (
            queue().pending("t", 0, {TRN: 3}),
            pools(p5=1, unlimited=True),
            "t",
            "fits: ml.trn1.32xlarge has no capacity limit",
        ),
        (
            queue().preempting("low", 0, {G5: 2}).pending("hi", 3, {G5: 2}),
            pools(g5=2),
            "hi",
            "waiting for 2 instances of ml.g5.xlarge being released by stopping jobs",
        ),
        (
            queue().running("low", 0).running("mid", 2).pending("hi", 3),
            pools(p5=2),
            "hi",
            "waiting for 1 instance of ml.p5.48xlarge being released by stopping jobs",
        ),
        (
            queue().running("x", 5).pending("h", 3),
            pools(p5=1),
            "h",
            (
                "needs 1 instance of ml.p5.48xlarge, 0 free, 0 being released; "
                "stopping every lower-priority job would not make room"
            ),
        ),
        (
            queue().pending("big", 0, {P5: 4}),
            pools(p5=2),
            "big",
            "needs 4 instances of ml.p5.48xlarge but the pool has 2",
        ),
        (
            queue().pending("t", 0, {TRN: 1}),
            pools(p5=2),
            "t",
            "needs 1 instance of ml.trn1.32xlarge, which has no configured pool",
        ),
        (
            queue().pending("r", 0, backoff_until=NOW + timedelta(seconds=30)),
            pools(p5=1),
            "r",
            "start refused (ThrottlingException); retrying start after 2025-03-01T10:00:30Z",
        ),
        (
            queue().running("hi", 5, {P5: 2}).pending("head", 3, {P5: 4}).pending("low", 1, {P5: 2}),
            pools(p5=4, backfill=True),
            "low",
            (
                "backfill: needs 2, 2 of 4 ml.p5.48xlarge instances free; head head cannot start yet (lacks 2 instances "
                "of ml.p5.48xlarge even after the stops in flight); stopped first when it can start"
            ),
        ),
        (
            queue().running("low", 0).running("mid", 2).pending("hi", 3),
            pools(p5=2),
            "low",
            "preempted for hi (priority 3 > 0), which lacks 1 instance of ml.p5.48xlarge",
        ),
        (
            queue().pending("head", 1, {P5: 2}).running("later", 1, backfill=True),
            pools(p5=2, backfill=True),
            "later",
            "backfilled; reclaimed by head, which is ahead of it in the queue and lacks 1 instance of ml.p5.48xlarge",
        ),
    ],
)
def test_reason(builder, config, job: str, expected: str) -> None:
    actions = decide(builder.build(), NOW, config)

    assert reason_of(actions, job) == expected


@pytest.mark.parametrize(
    "builder",
    [
        queue().running("x", 5).pending("head", 1, {P5: 2}).pending("mid", 1).pending("last", 0),
        queue().preempting("x", 0).running("y", 5).pending("head", 3).pending("next", 1).pending("last", 0),
    ],
)
def test_a_job_waiting_behind_a_head_gets_no_reason_written(builder) -> None:
    """Its place changes with every start and arrival: readers compute it (reasons.queued)."""
    actions = decide(builder.build(), NOW, pools(p5=2))

    assert "last" not in {action.job_name for action in actions}


def test_the_reason_of_a_queued_job_names_its_place_and_the_head() -> None:
    assert reasons.queued(2, P5, "head") == "2 jobs ahead in ml.p5.48xlarge; head is first and waits for instances"
    assert reasons.queued(1, P5, None) == "1 job ahead in ml.p5.48xlarge"


def test_wait_is_explained_only_when_the_reason_changes() -> None:
    config = pools(p5=1)
    snapshot = queue().running("x", 5).pending("a", 1).pending("b", 0).build()
    first = decide(snapshot, NOW, config)
    explained = apply(snapshot, first, NOW)

    again = decide(explained, NOW, config)
    freed = decide(
        queue().pending("a", 1, reason=reason_of(first, "a")).pending("b", 0).build(),
        NOW,
        config,
    )

    assert [(type(action), action.job_name) for action in first] == [(ExplainWait, "a")]
    assert again == []
    assert [(type(action), action.job_name) for action in freed] == [(StartJob, "a"), (ExplainWait, "b")]


def test_start_opens_the_next_attempt_and_preemption_names_the_live_one() -> None:
    start = decide(queue().pending("resumed", 0, past_attempts=2).build(), NOW, pools(p5=1))
    preempt = decide(queue().running("low", 0, past_attempts=1).pending("hi", 2).build(), NOW, pools(p5=1))

    assert start[0] == StartJob("resumed", 3, start[0].reason, placement=Placement(P5, 1))
    assert preempt[0] == PreemptJob("low", 2, "hi", preempt[0].reason)
