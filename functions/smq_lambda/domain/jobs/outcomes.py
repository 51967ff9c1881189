"""How an attempt ended: one name per ending, so every module compares the same values.

The values are what DynamoDB items and the API's JSON hold (`attempts[].outcome`,
`attempt_outcomes`); a StrEnum keeps them plain strings there.
"""

from __future__ import annotations

from enum import StrEnum


class AttemptOutcome(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    PREEMPTED = "preempted"
    """Stopped for a job of higher priority; the job waits again."""
    PLAN_WINDOW_CLOSED = "plan-window-closed"
    """Stopped by the queue before its training plan's window ended; the job waits again. Not a
    preemption: `max_preemptions` does not count it."""
    STOPPED = "stopped"
    """Stopped by a cancel, or from outside the queue; the job ends cancelled."""
    REFUSED = "refused"
    """SageMaker refused to create the attempt's training job."""
    LOST = "lost"
    """SageMaker no longer knows the attempt's training job."""
    MAX_RUNTIME_EXCEEDED = "max-runtime-exceeded"
    MAX_WAIT_TIME_EXCEEDED = "max-wait-time-exceeded"
    """SageMaker stopped a managed-spot attempt at its MaxWaitTimeInSeconds."""
    INFRASTRUCTURE_FAILURE = "infrastructure-failure"
    """Failed for the infrastructure's reason; the job waits again for its next attempt."""
    SPOT_FALLBACK = "spot-fallback"
    """A managed-spot attempt stopped after too many interruptions; the job waits again, on demand."""
    IDLE_GPU = "idle-gpu"
    """Stopped because its GPUs sat idle; the job ends failed."""
    UNKNOWN = "unknown"
    """How an attempt dropped from the inline list is counted when it never recorded an outcome."""
