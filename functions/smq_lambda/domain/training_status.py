"""What a SageMaker status report means for a job — pure, so duplicate, late and reordered reports
can be reasoned about (and property-tested) without AWS.

A report changes a job only when it is about the job's current, still-open attempt and moves it
forward. Anything else — an older attempt, an attempt already closed, a status that does not
advance the state — changes nothing, which is what makes at-least-once delivery safe.
"""

from __future__ import annotations

from datetime import datetime

from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.domain.states import JobState
from smq_lambda.ports import TrainingJobStatus

IN_PROGRESS = "InProgress"
COMPLETED = "Completed"
FAILED = "Failed"
STOPPING = "Stopping"
STOPPED = "Stopped"
MAX_RUNTIME_EXCEEDED = "MaxRuntimeExceeded"


def apply_status(job: Job, attempt_number: int, status: TrainingJobStatus, now: datetime) -> Job | None:
    """The job after SageMaker reported `status` for attempt `attempt_number`, or None for no change."""
    attempt = job.current_attempt
    if attempt is None or attempt.number != attempt_number or not attempt.is_open or not job.is_live:
        return None
    if status.status == IN_PROGRESS:
        return lifecycle.mark_running(job, now) if job.state is JobState.STARTING else None
    if status.status == COMPLETED:
        return lifecycle.finish(job, JobState.COMPLETED, now, outcome="completed", reason="completed")
    if status.status == FAILED:
        reason = status.failure_reason or "training job failed"
        return lifecycle.finish(job, JobState.FAILED, now, outcome="failed", reason=reason)
    if status.status == STOPPED:
        return _stopped(job, status, now)
    return None


def _stopped(job: Job, status: TrainingJobStatus, now: datetime) -> Job:
    if job.state is JobState.PREEMPTING:
        return lifecycle.requeue(job, now, outcome="preempted", reason=job.reason or "preempted")
    if job.state is JobState.STOPPING:
        return lifecycle.finish(job, JobState.CANCELLED, now, outcome="stopped", reason=job.reason)
    if status.secondary_status == MAX_RUNTIME_EXCEEDED:
        reason = "stopped by SageMaker: MaxRuntimeInSeconds exceeded"
        return lifecycle.finish(job, JobState.FAILED, now, outcome="max-runtime-exceeded", reason=reason)
    reason = "stopped outside the queue"
    return lifecycle.finish(job, JobState.CANCELLED, now, outcome="stopped", reason=reason)


def vanished(job: Job, now: datetime) -> Job:
    """SageMaker has no job for a live attempt that was created earlier (never a `starting` one,
    which is re-created instead): a stop that was asked for has its effect; anything else failed."""
    if job.state is JobState.PREEMPTING:
        return lifecycle.requeue(job, now, outcome="preempted", reason=job.reason or "preempted")
    if job.state is JobState.STOPPING:
        return lifecycle.finish(job, JobState.CANCELLED, now, outcome="stopped", reason=job.reason)
    reason = "SageMaker no longer knows this training job"
    return lifecycle.finish(job, JobState.FAILED, now, outcome="lost", reason=reason)
