"""A stop a governance rule asked for (an idle GPU) ends the job failed with the rule's outcome,
however the attempt's end is learned; a cancel still ends it cancelled."""

from __future__ import annotations

from datetime import timedelta

import pytest
from smq_lambda.adapters.item_codec import from_item, to_item
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.jobs.training_status import apply_status, vanished
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus

from tests.adapters.builders import T0, job

REASON = "idle GPU: every host at or below 1% GPU utilization for 3 consecutive periods of 300 s"


def _running():
    started = lifecycle.start(job("train"), T0, reason="capacity")
    return lifecycle.mark_running(started, T0)


def _stopped_report(running) -> TrainingJobStatus:
    return TrainingJobStatus(name=running.current_attempt.training_job_name, status="Stopped")


@pytest.mark.parametrize("learned_by", ["Stopped report", "vanished"])
def test_a_governance_stop_ends_the_job_failed_with_its_outcome(learned_by: str) -> None:
    running = _running()
    stopping = lifecycle.stop_for_governance(running, T0, outcome=AttemptOutcome.IDLE_GPU, reason=REASON)
    assert (stopping.state, stopping.reason, stopping.stop_outcome) == (
        JobState.STOPPING,
        REASON,
        AttemptOutcome.IDLE_GPU,
    )
    assert stopping.history[-1].what == REASON
    later = T0 + timedelta(minutes=1)
    ended = (
        apply_status(stopping, 1, _stopped_report(running), later)
        if learned_by == "Stopped report"
        else vanished(stopping, later)
    )
    assert ended is not None
    assert (ended.state, ended.reason, ended.stop_outcome) == (JobState.FAILED, REASON, None)
    assert ended.current_attempt is not None and ended.current_attempt.outcome == AttemptOutcome.IDLE_GPU


def test_a_cancel_still_ends_cancelled() -> None:
    running = _running()
    stopping = lifecycle.request_stop(running, T0, preempt=False, reason="cancelled by alice")
    ended = apply_status(stopping, 1, _stopped_report(running), T0)
    assert ended is not None and ended.state is JobState.CANCELLED


def test_a_job_that_completes_before_the_stop_lands_is_completed() -> None:
    running = _running()
    stopping = lifecycle.stop_for_governance(running, T0, outcome=AttemptOutcome.IDLE_GPU, reason=REASON)
    report = TrainingJobStatus(name=running.current_attempt.training_job_name, status="Completed")
    ended = apply_status(stopping, 1, report, T0)
    assert ended is not None and ended.state is JobState.COMPLETED and ended.stop_outcome is None


def test_the_stop_outcome_survives_the_table() -> None:
    stopping = lifecycle.stop_for_governance(_running(), T0, outcome=AttemptOutcome.IDLE_GPU, reason=REASON)
    assert from_item(to_item(stopping, ttl_days=30)).stop_outcome == AttemptOutcome.IDLE_GPU
    assert "stop_outcome" not in to_item(_running(), ttl_days=30)
