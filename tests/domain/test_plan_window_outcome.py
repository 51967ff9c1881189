"""A stop the queue makes for a training plan's window closes the attempt as `plan-window-closed`,
not `preempted`, however its end is learned; a cancel meanwhile still ends the job cancelled, and the
table keeps the difference (an item of an earlier release, which has none, lands as a preemption)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from smq_lambda.adapters.item_codec import from_item, to_item
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.jobs.training_status import apply_status, vanished
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus

from tests.adapters.builders import T0, job

WINDOW_END = "training plan p's window ends at 2025-03-01T13:00:00Z; stopped 15 min before so it checkpoints"
LATER = T0 + timedelta(minutes=1)


def _running() -> Job:
    return lifecycle.mark_running(lifecycle.start(job("train"), T0, reason="capacity"), T0)


def _stopped(stopping: Job) -> Job | None:
    attempt = stopping.current_attempt
    assert attempt is not None
    return apply_status(
        stopping, attempt.number, TrainingJobStatus(name=attempt.training_job_name, status="Stopped"), LATER
    )


LEARNED_BY = {"Stopped report": _stopped, "vanished": lambda stopping: vanished(stopping, LATER)}


@pytest.mark.parametrize("learned_by", LEARNED_BY)
@pytest.mark.parametrize("outcome", [AttemptOutcome.PREEMPTED, AttemptOutcome.PLAN_WINDOW_CLOSED])
def test_the_attempt_closes_with_the_outcome_its_stop_was_for(outcome: AttemptOutcome, learned_by: str) -> None:
    stopping = lifecycle.preempt(_running(), T0, outcome=outcome, reason=WINDOW_END, history=WINDOW_END)

    ended = LEARNED_BY[learned_by](stopping)

    assert ended is not None
    assert (ended.state, ended.stop_outcome, ended.history[-1].what) == (JobState.PENDING, None, WINDOW_END)
    assert ended.attempts[-1].outcome == outcome
    assert ended.attempt_outcomes == {outcome: 1}


def test_a_cancel_of_a_job_stopping_for_its_window_ends_it_cancelled() -> None:
    stopping = lifecycle.preempt(_running(), T0, outcome=AttemptOutcome.PLAN_WINDOW_CLOSED, reason=WINDOW_END)
    cancelling = lifecycle.request_stop(stopping, T0, preempt=False, reason="cancelled by alice; stopping")

    ended = _stopped(cancelling)

    assert ended is not None and ended.state is JobState.CANCELLED
    assert ended.attempts[-1].outcome == AttemptOutcome.STOPPED


@pytest.mark.parametrize(
    ("outcome", "stored"),
    [(AttemptOutcome.PREEMPTED, None), (AttemptOutcome.PLAN_WINDOW_CLOSED, "plan-window-closed")],
)
def test_the_table_keeps_only_a_plan_window_stop(outcome: AttemptOutcome, stored: str | None) -> None:
    item = to_item(lifecycle.preempt(_running(), T0, outcome=outcome, reason=WINDOW_END), ttl_days=30)

    assert item.get("stop_outcome", {}).get("S") == stored
    ended = _stopped(from_item(item))
    assert ended is not None and ended.attempts[-1].outcome == outcome
