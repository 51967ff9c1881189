"""Pure state changes of a job: each returns the next Job value, checked against the state machine.

Stores write the returned value conditionally on the version the change started from, so two
writers racing on one job cannot both win.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from smq_lambda.domain.model import Attempt, Job, attempt_name
from smq_lambda.domain.states import JobState, check_transition

BACKOFF_BASE = timedelta(seconds=15)
BACKOFF_MAX = timedelta(minutes=15)


def _advance(job: Job, target: JobState, now: datetime, **changes: object) -> Job:
    check_transition(job.state, target)
    return replace(job, state=target, version=job.version + 1, updated_at=now, **changes)


def _close_attempt(job: Job, now: datetime, outcome: str, reason: str | None) -> tuple[Attempt, ...]:
    attempt = job.current_attempt
    if attempt is None or not attempt.is_open:
        return job.attempts
    closed = replace(attempt, ended_at=now, outcome=outcome, reason=reason)
    return (*job.attempts[:-1], closed)


def start(job: Job, now: datetime, *, reason: str, backfill: bool = False) -> Job:
    """pending → starting, opening the next attempt (its SageMaker name is fixed here)."""
    number = job.next_attempt_number
    attempt = Attempt(
        number=number,
        training_job_name=attempt_name(job.name, job.job_id, number),
        started_at=now,
        backfill=backfill,
    )
    return _advance(job, JobState.STARTING, now, attempts=(*job.attempts, attempt), reason=reason, not_before=None)


def mark_running(job: Job, now: datetime) -> Job:
    return _advance(job, JobState.RUNNING, now, reason="training", start_failures=0)


def refuse_start(job: Job, now: datetime, *, reason: str, lasting: bool) -> Job:
    """SageMaker refused the attempt: a lasting refusal fails the job, a transient one backs off."""
    attempts = _close_attempt(job, now, "refused", reason)
    if lasting:
        return _advance(job, JobState.FAILED, now, attempts=attempts, reason=reason)
    failures = job.start_failures + 1
    delay = min(BACKOFF_BASE * 2 ** (failures - 1), BACKOFF_MAX)
    return _advance(
        job,
        JobState.PENDING,
        now,
        attempts=attempts,
        reason=f"start refused ({reason}); retrying after {int(delay.total_seconds())} s",
        start_failures=failures,
        not_before=now + delay,
    )


def request_stop(job: Job, now: datetime, *, preempt: bool, reason: str) -> Job:
    """A stop was decided: preemption returns the job to the queue, a cancel ends it."""
    return _advance(job, JobState.PREEMPTING if preempt else JobState.STOPPING, now, reason=reason)


def requeue(job: Job, now: datetime, *, outcome: str, reason: str) -> Job:
    """The attempt ended but the job goes on: back to pending with its original submission time."""
    return _advance(job, JobState.PENDING, now, attempts=_close_attempt(job, now, outcome, reason), reason=reason)


def finish(job: Job, target: JobState, now: datetime, *, outcome: str, reason: str | None) -> Job:
    return _advance(job, target, now, attempts=_close_attempt(job, now, outcome, reason), reason=reason)


def cancel_pending(job: Job, now: datetime, *, by: str) -> Job:
    return _advance(job, JobState.CANCELLED, now, reason=f"cancelled by {by} before it started")


def explain(job: Job, now: datetime, reason: str) -> Job:
    """Record why a job waits; not a state change, but still a versioned write."""
    return replace(job, reason=reason, version=job.version + 1, updated_at=now)


def reprioritize(job: Job, now: datetime, priority: int) -> Job:
    return replace(job, priority=priority, version=job.version + 1, updated_at=now)
