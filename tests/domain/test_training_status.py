"""What SageMaker reports mean for a job, as a table: (job state, report) → new state or no change."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.domain.states import JobState
from smq_lambda.domain.training_status import apply_status, vanished
from smq_lambda.ports import TrainingJobStatus

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def job_in(state: JobState) -> Job:
    job = Job(name="j", job_id="0123456789abcdef", state=JobState.PENDING, priority=0, submitted_at=NOW,
              demand={"ml.g5.xlarge": 1}, owner="o")  # fmt: skip
    job = lifecycle.start(job, NOW, reason="fits")
    if state is JobState.STARTING:
        return job
    job = lifecycle.mark_running(job, NOW)
    if state is JobState.RUNNING:
        return job
    return lifecycle.request_stop(job, NOW, preempt=state is JobState.PREEMPTING, reason=f"{state} for test")


def report(status: str, secondary: str | None = None) -> TrainingJobStatus:
    return TrainingJobStatus(name="j-01234567-1", status=status, secondary_status=secondary, failure_reason="oops")


S = JobState
CASES = [
    (S.STARTING, "InProgress", None, S.RUNNING),
    (S.RUNNING, "InProgress", None, None),
    (S.PREEMPTING, "InProgress", None, None),
    (S.STARTING, "Stopping", None, None),
    (S.RUNNING, "Completed", None, S.COMPLETED),
    (S.PREEMPTING, "Completed", None, S.COMPLETED),
    (S.STOPPING, "Completed", None, S.COMPLETED),
    (S.RUNNING, "Failed", None, S.FAILED),
    (S.STARTING, "Failed", None, S.FAILED),
    (S.PREEMPTING, "Stopped", None, S.PENDING),
    (S.STOPPING, "Stopped", None, S.CANCELLED),
    (S.RUNNING, "Stopped", None, S.CANCELLED),
    (S.RUNNING, "Stopped", "MaxRuntimeExceeded", S.FAILED),
]


@pytest.mark.parametrize(("state", "status", "secondary", "expected"), CASES)
def test_report_table(state: JobState, status: str, secondary: str | None, expected: JobState | None) -> None:
    job = job_in(state)
    updated = apply_status(job, 1, report(status, secondary), NOW)
    if expected is None:
        assert updated is None
    else:
        assert updated is not None and updated.state is expected
        assert updated.version == job.version + 1
        if expected is not S.RUNNING:
            assert updated.attempts[-1].ended_at == NOW


@pytest.mark.parametrize("status", ["InProgress", "Completed", "Failed", "Stopped"])
def test_reports_of_another_attempt_or_a_closed_one_change_nothing(status: str) -> None:
    running = job_in(S.RUNNING)
    assert apply_status(running, 2, report(status), NOW) is None
    assert apply_status(running, 0, report(status), NOW) is None
    closed = replace(running, attempts=(replace(running.attempts[0], ended_at=NOW),))
    assert apply_status(closed, 1, report(status), NOW) is None


def test_a_preempted_job_keeps_its_submission_time_and_reason() -> None:
    requeued = apply_status(job_in(S.PREEMPTING), 1, report("Stopped"), NOW)
    assert requeued is not None
    assert requeued.submitted_at == NOW
    assert requeued.reason == "preempting for test"
    assert requeued.attempts[-1].outcome == "preempted"


@pytest.mark.parametrize(
    ("state", "expected"), [(S.PREEMPTING, S.PENDING), (S.STOPPING, S.CANCELLED), (S.RUNNING, S.FAILED)]
)
def test_an_attempt_sagemaker_lost(state: JobState, expected: JobState) -> None:
    assert vanished(job_in(state), NOW).state is expected
