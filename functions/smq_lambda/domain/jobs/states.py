"""The job state machine: the one place that says which state changes are legal.

    pending ──start──▶ starting ──InProgress──▶ running ──Completed/Failed──▶ completed / failed
       ▲                  │                       │
       │                  │ transient refusal     ├─preempt──▶ preempting ──Stopped──▶ pending
       └──────────────────┘                       └─cancel───▶ stopping ────Stopped──▶ cancelled

A pending job can be cancelled or failed (a lasting refusal) without ever running. A live job that
finishes before a stop lands ends as SageMaker reports, and a stop issued from outside the queue
ends it as cancelled.
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    PENDING = "pending"
    STARTING = "starting"
    RUNNING = "running"
    PREEMPTING = "preempting"
    STOPPING = "stopping"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_STATES = frozenset(
    {JobState.PENDING, JobState.STARTING, JobState.RUNNING, JobState.PREEMPTING, JobState.STOPPING}
)
LIVE_STATES = frozenset({JobState.STARTING, JobState.RUNNING, JobState.PREEMPTING, JobState.STOPPING})
"""States in which an attempt exists in SageMaker and holds instances of its pools."""
RELEASING_STATES = frozenset({JobState.PREEMPTING, JobState.STOPPING})
"""Live states whose instances are already on their way back (a stop was sent)."""
TERMINAL_STATES = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED})

_FINISH = {JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED}

TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.PENDING: frozenset({JobState.STARTING, JobState.FAILED, JobState.CANCELLED}),
    JobState.STARTING: frozenset(
        {JobState.RUNNING, JobState.PENDING, JobState.PREEMPTING, JobState.STOPPING, *_FINISH}
    ),
    JobState.RUNNING: frozenset({JobState.PREEMPTING, JobState.STOPPING, JobState.PENDING, *_FINISH}),
    JobState.PREEMPTING: frozenset({JobState.PENDING, JobState.STOPPING, *_FINISH}),
    JobState.STOPPING: frozenset(_FINISH),
    JobState.COMPLETED: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}


class IllegalTransition(ValueError):
    """A caller asked for a state change the state machine does not allow."""

    def __init__(self, source: JobState, target: JobState) -> None:
        super().__init__(f"a {source} job cannot become {target}")
        self.source = source
        self.target = target


def can_transition(source: JobState, target: JobState) -> bool:
    return target in TRANSITIONS[source]


def check_transition(source: JobState, target: JobState) -> None:
    if not can_transition(source, target):
        raise IllegalTransition(source, target)


ENTERED_ONLY_WHILE_LIVE = frozenset(
    state
    for state in LIVE_STATES
    if all(source in LIVE_STATES for source, targets in TRANSITIONS.items() if state in targets)
)
"""Live states no non-live state leads to (running, preempting, stopping): a job entering one was
already live, so what holds the pools' instances does not change."""
