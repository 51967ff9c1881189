"""What a SageMaker status report means for a job — pure, so duplicate, late and reordered reports
can be reasoned about (and property-tested) without AWS.

A report changes a job only when it is about the job's current, still-open attempt and moves it
forward. Anything else — an older attempt, an attempt already closed, a status that does not
advance the state — changes nothing, which is what makes at-least-once delivery safe.

Before the plain meaning of a status, the governance rules have their say
(governance/governed_reports.py applies them, then `apply_status`).

A report proves which attempt it is about by its training job's name, never by its tags alone:
anyone who may create a training job may tag it `smq:job=<someone's job>`, but only the queue
creates training jobs under its attempts' names (each has a random part recorded in the attempt
before the create), and SageMaker names are unique in an account and region. A report under any
other name is about a training job outside the queue.
"""

from __future__ import annotations

from datetime import datetime

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus

IN_PROGRESS = "InProgress"
COMPLETED = "Completed"
FAILED = "Failed"
STOPPING = "Stopping"
STOPPED = "Stopped"
MAX_RUNTIME_EXCEEDED = "MaxRuntimeExceeded"


ENDED_IN_SAGEMAKER = frozenset(
    {
        AttemptOutcome.COMPLETED,
        AttemptOutcome.FAILED,
        AttemptOutcome.PREEMPTED,
        AttemptOutcome.PLAN_WINDOW_CLOSED,
        AttemptOutcome.STOPPED,
        AttemptOutcome.MAX_RUNTIME_EXCEEDED,
        AttemptOutcome.INFRASTRUCTURE_FAILURE,
        AttemptOutcome.IDLE_GPU,
        AttemptOutcome.MAX_WAIT_TIME_EXCEEDED,
    }
)
"""Outcomes an attempt gets only from SageMaker's report that its training job ended."""


def is_stale(job: Job, attempt_number: int, status: TrainingJobStatus) -> bool:
    """A report that the training job of an attempt is still busy, arriving after SageMaker reported
    its end (events are delivered late and out of order): its instances are not held any more. (The
    orphan check still stops such a training job unless SageMaker itself reported its end
    (`reported_ended`): a stop of an ended job is harmless, and a job that truly still runs is
    stopped.)"""
    if status.status not in (IN_PROGRESS, STOPPING):
        return False
    attempt = job.attempt(attempt_number)
    return attempt is not None and attempt.outcome in ENDED_IN_SAGEMAKER


REPORTED_ENDINGS = frozenset({AttemptOutcome.COMPLETED, AttemptOutcome.FAILED, AttemptOutcome.MAX_RUNTIME_EXCEEDED})
"""Outcomes only SageMaker's own end report of the training job records: it cannot run again."""


def reported_ended(job: Job, attempt_number: int) -> bool:
    """SageMaker reported the end of attempt `attempt_number`'s training job: a later report that
    it is in progress was delivered late."""
    attempt = job.attempt(attempt_number)
    return attempt is not None and attempt.outcome in REPORTED_ENDINGS


def is_own_attempt(job: Job, attempt_number: int, training_job_name: str) -> bool:
    """Whether `training_job_name` is the SageMaker name of attempt `attempt_number` of this job,
    one the queue has opened (so a report about it may change the job, or stop it as an orphan).
    Names carry a random part, so only the attempts the job keeps in full (MAX_INLINE_ATTEMPTS) can
    be told by name; a training job of an older attempt counts as outside the queue."""
    return any(
        attempt.number == attempt_number and attempt.training_job_name == training_job_name for attempt in job.attempts
    )


def apply_status(job: Job, attempt_number: int, status: TrainingJobStatus, now: datetime) -> Job | None:
    """The job after SageMaker reported `status` for attempt `attempt_number`, or None for no change:
    the status's plain meaning, which `governed_reports.apply_report` applies when no governance
    rule answers."""
    attempt = job.current_attempt
    if attempt is None or attempt.number != attempt_number or not attempt.is_open or not job.is_live:
        return None
    if status.name != attempt.training_job_name:
        return None
    if status.status == IN_PROGRESS:
        return lifecycle.mark_running(job, now) if job.state is JobState.STARTING else None
    if status.status == COMPLETED:
        return lifecycle.finish(job, JobState.COMPLETED, now, outcome=AttemptOutcome.COMPLETED, reason="completed")
    if status.status == FAILED:
        reason = status.failure_reason or "training job failed"
        return lifecycle.finish(job, JobState.FAILED, now, outcome=AttemptOutcome.FAILED, reason=reason)
    if status.status == STOPPED:
        return _stopped(job, status, now)
    return None


def _stopped(job: Job, status: TrainingJobStatus, now: datetime) -> Job:
    if job.state is JobState.PREEMPTING:
        return lifecycle.end_preemption(job, now)
    if job.state is JobState.STOPPING:
        return lifecycle.end_stopped(job, now)
    if status.secondary_status == MAX_RUNTIME_EXCEEDED:
        reason = "stopped by SageMaker: MaxRuntimeInSeconds exceeded"
        return lifecycle.finish(job, JobState.FAILED, now, outcome=AttemptOutcome.MAX_RUNTIME_EXCEEDED, reason=reason)
    reason = "stopped outside the queue"
    return lifecycle.finish(job, JobState.CANCELLED, now, outcome=AttemptOutcome.STOPPED, reason=reason)


def vanished(job: Job, now: datetime) -> Job:
    """SageMaker has no job for a live attempt that was created earlier (never a `starting` one,
    which is re-created instead): a stop that was asked for has its effect; anything else failed."""
    if job.state is JobState.PREEMPTING:
        return lifecycle.end_preemption(job, now)
    if job.state is JobState.STOPPING:
        return lifecycle.end_stopped(job, now)
    reason = "SageMaker no longer knows this training job"
    return lifecycle.finish(job, JobState.FAILED, now, outcome=AttemptOutcome.LOST, reason=reason)
