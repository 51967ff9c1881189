"""What SageMaker reports mean for a job, as a table: (job state, report) → new state or no change."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job, attempt_name
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.jobs.training_status import apply_status, is_own_attempt, vanished
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def job_in(state: JobState) -> Job:
    job = Job(name="j", job_id="0123456789abcdef", state=JobState.PENDING, priority=0, submitted_at=NOW,
              demand={"ml.g5.xlarge": 1}, owner="o")  # fmt: skip
    job = lifecycle.start(job, NOW, reason="fits", nonce="01234567")
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


# ---------------------------------------------------------------- which attempt a report is about

RESUBMITTED_ID = "fedcba9876543210"


@pytest.mark.parametrize("status", ["InProgress", "Completed", "Failed", "Stopped"])
@pytest.mark.parametrize(
    "training_job_name",
    [
        pytest.param("forged", id="a job started outside the queue with the victim's tags"),
        pytest.param("j-01234567-2", id="the name of an attempt not opened yet"),
        pytest.param(attempt_name("j", RESUBMITTED_ID, 1), id="attempt 1 of another job of that name"),
        pytest.param("J-01234567-1", id="another spelling"),
    ],
)
def test_a_report_under_a_name_that_is_not_the_attempts_own_changes_nothing(
    status: str, training_job_name: str
) -> None:
    for state in (S.STARTING, S.RUNNING, S.PREEMPTING, S.STOPPING):
        forged = replace(report(status), name=training_job_name)
        assert apply_status(job_in(state), 1, forged, NOW) is None


def test_a_late_report_of_an_earlier_job_of_that_name_does_not_land_on_a_resubmitted_one() -> None:
    finished = job_in(S.RUNNING)
    resubmitted = lifecycle.start(
        replace(finished, job_id=RESUBMITTED_ID, state=S.PENDING, attempts=()), NOW, reason="fits"
    )
    late_completed = report("Completed")

    assert apply_status(finished, 1, late_completed, NOW) is not None, "the report is the finished job's own"
    assert apply_status(resubmitted, 1, late_completed, NOW) is None
    assert not is_own_attempt(resubmitted, 1, late_completed.name)


def test_a_job_owns_the_names_of_the_attempts_it_opened_and_no_others() -> None:
    job = lifecycle.mark_running(
        lifecycle.start(
            lifecycle.requeue(job_in(S.RUNNING), NOW, outcome="preempted", reason="p"),
            NOW,
            reason="fits",
            nonce="01234567",
        ),
        NOW,
    )
    assert job.current_attempt is not None and job.current_attempt.number == 2

    assert is_own_attempt(job, 1, "j-01234567-1")
    assert is_own_attempt(job, 2, "j-01234567-2")
    assert not is_own_attempt(job, 3, "j-01234567-3"), "not opened yet"
    assert not is_own_attempt(job, 0, "j-01234567-0")
    assert not is_own_attempt(job, 1, "j-01234567-2"), "the name of another attempt"
    assert not is_own_attempt(job, 2, attempt_name("j", RESUBMITTED_ID, 2))
    never_started = replace(job, attempts=())
    assert not is_own_attempt(never_started, 1, "j-01234567-1")


@given(st.text(min_size=1, max_size=63), st.sampled_from(["InProgress", "Completed", "Failed", "Stopped"]))
def test_only_the_attempts_own_name_moves_a_job(training_job_name: str, status: str) -> None:
    running = job_in(S.RUNNING)
    updated = apply_status(running, 1, replace(report(status), name=training_job_name), NOW)
    if training_job_name != "j-01234567-1":
        assert updated is None
