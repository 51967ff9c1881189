"""Start refusals: the backoff never overflows, and a streak of transient refusals ends in a failure
once it passes the configured count or age."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.lifecycle import BACKOFF_BASE, BACKOFF_MAX, StartRetryLimits, backoff, refuse_start
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState

NOW = datetime(2024, 1, 1, tzinfo=UTC)
NO_LIMITS = StartRetryLimits(max_refusals=10**9, max_duration=timedelta.max)
huge_counts = st.integers(min_value=0, max_value=10**6)
"""Far past the 45 refusals that overflowed an uncapped exponent, yet quick to fail if one returns."""


def pending_job() -> Job:
    return Job(name="j", job_id="0123456789abcdef", state=JobState.PENDING, priority=0, submitted_at=NOW,
               demand={"ml.g5.xlarge": 1}, owner="o")  # fmt: skip


def refused_in_a_row(times: int, *, every: timedelta | None, limits: StartRetryLimits) -> tuple[Job, datetime]:
    """A job whose start SageMaker refused `times` times in a row, `every` apart (None: each retry as
    soon as its backoff allows); and the time of the next try."""
    job, now = pending_job(), NOW
    for _ in range(times):
        job = refuse_start(
            lifecycle.start(job, now, reason="fits"), now, reason="capacity", lasting=False, limits=limits
        )
        if job.state is JobState.FAILED:
            break
        now = now + every if every is not None else job.not_before or now
    return job, now


@given(huge_counts)
def test_the_backoff_is_bounded_for_any_number_of_refusals(failures: int) -> None:
    assert BACKOFF_BASE <= backoff(failures) <= BACKOFF_MAX


@given(huge_counts)
def test_the_backoff_never_shrinks_as_refusals_add_up(failures: int) -> None:
    assert backoff(failures) <= backoff(failures + 1)


def test_the_backoff_doubles_from_its_base_up_to_its_ceiling() -> None:
    assert [int(backoff(n).total_seconds()) for n in range(1, 10)] == [15, 30, 60, 120, 240, 480, 900, 900, 900]


@given(huge_counts)
def test_a_transient_refusal_after_any_number_of_earlier_ones_backs_off_without_overflow(failures: int) -> None:
    """(Before the exponent was capped, the 45th refusal in a row overflowed.)"""
    starting = lifecycle.start(replace(pending_job(), start_failures=failures), NOW, reason="fits")

    refused = refuse_start(starting, NOW, reason="capacity", lasting=False, limits=NO_LIMITS)

    assert refused.state is JobState.PENDING
    assert refused.not_before is not None and NOW < refused.not_before <= NOW + BACKOFF_MAX
    assert refused.start_failures == failures + 1


@given(st.integers(min_value=0, max_value=10**30))
def test_with_the_default_limits_any_number_of_refusals_ends_pending_or_failed(failures: int) -> None:
    starting = lifecycle.start(replace(pending_job(), start_failures=failures), NOW, reason="fits")

    refused = refuse_start(starting, NOW, reason="capacity", lasting=False)

    assert refused.state in (JobState.PENDING, JobState.FAILED)


@pytest.mark.parametrize(
    ("max_refusals", "refusals", "expected"),
    [(3, 2, JobState.PENDING), (3, 3, JobState.FAILED), (1, 1, JobState.FAILED), (100, 99, JobState.PENDING)],
)
def test_the_refusal_that_reaches_the_count_limit_fails_the_job(
    max_refusals: int, refusals: int, expected: JobState
) -> None:
    limits = StartRetryLimits(max_refusals=max_refusals, max_duration=timedelta.max)

    job, _ = refused_in_a_row(refusals, every=timedelta(seconds=1), limits=limits)

    assert job.state is expected


def test_a_job_that_gives_up_fails_with_the_last_reason() -> None:
    limits = StartRetryLimits(max_refusals=2, max_duration=timedelta.max)
    job, now = refused_in_a_row(1, every=timedelta(minutes=1), limits=limits)

    failed = refuse_start(lifecycle.start(job, now, reason="fits"), now, reason="InsufficientCapacityError: none left", lasting=False, limits=limits)  # fmt: skip

    assert failed.state is JobState.FAILED
    assert failed.reason is not None and failed.reason.endswith("InsufficientCapacityError: none left")
    assert "2 times" in failed.reason
    assert [attempt.outcome for attempt in failed.attempts] == ["refused", "refused"]
    assert failed.not_before is None or failed.not_before <= now


@pytest.mark.parametrize(
    ("every", "refusals", "expected"),
    [
        (timedelta(hours=2), 12, JobState.PENDING),  # the 12th refusal comes 22 h after the first
        (timedelta(hours=2), 13, JobState.FAILED),  # the 13th, 24 h after it
        (timedelta(hours=13), 3, JobState.FAILED),
        (timedelta(minutes=15), 20, JobState.PENDING),
    ],
)
def test_a_refusal_a_day_after_the_first_of_its_streak_fails_the_job(
    every: timedelta, refusals: int, expected: JobState
) -> None:
    limits = StartRetryLimits(max_refusals=1000, max_duration=timedelta(hours=24))

    job, _ = refused_in_a_row(refusals, every=every, limits=limits)

    assert job.state is expected


@pytest.mark.parametrize(("refusals", "expected"), [(101, JobState.PENDING), (102, JobState.FAILED)])
def test_the_age_of_a_streak_longer_than_the_attempts_a_job_keeps_is_still_counted(
    refusals: int, expected: JobState
) -> None:
    """Retried as soon as the backoff allows, the 102nd refusal comes 24 h after the first
    (15 s + 30 s + ... + 480 s, then 900 s each); by then most attempts are no longer kept in full."""
    limits = StartRetryLimits(max_refusals=1000, max_duration=timedelta(hours=24))

    job, _ = refused_in_a_row(refusals, every=None, limits=limits)

    assert len(job.attempts) < refusals
    assert job.state is expected


def test_a_start_that_got_through_ends_the_streak() -> None:
    limits = StartRetryLimits(max_refusals=3, max_duration=timedelta(hours=1))
    job, now = refused_in_a_row(2, every=timedelta(minutes=50), limits=limits)
    ran = lifecycle.mark_running(lifecycle.start(job, now, reason="fits"), now)
    requeued = lifecycle.requeue(ran, now, outcome="preempted", reason="preempted")
    assert requeued.start_failures == 0

    later = now + timedelta(minutes=50)
    again = refuse_start(lifecycle.start(requeued, later, reason="fits"), later, reason="capacity", lasting=False, limits=limits)  # fmt: skip

    assert again.state is JobState.PENDING, "neither the count nor the age of the old streak carries over"
    assert again.start_failures == 1


def test_a_lasting_refusal_fails_at_once_whatever_the_limits() -> None:
    starting = lifecycle.start(pending_job(), NOW, reason="fits")

    failed = refuse_start(starting, NOW, reason="ValidationException: bad role", lasting=True, limits=NO_LIMITS)

    assert failed.state is JobState.FAILED
    assert failed.reason == "ValidationException: bad role"
