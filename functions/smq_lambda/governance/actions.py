"""What the governance rules ask the edges to do. Every action carries the reason a person reads
(in `smq describe`, `GET /jobs/{name}` or a notification), so a stopped job always says why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from smq_lambda.domain.jobs.outcomes import AttemptOutcome


@dataclass(frozen=True)
class Violation:
    """One way a training job breaks the policy."""

    field: str
    """Dotted path in the CreateTrainingJob request (`ResourceConfig.InstanceGroups[1].InstanceType`,
    `Tags.project`)."""
    rule: str
    """The policy key that was broken (`required_tags`, `max_instance_count`, ...)."""
    message: str
    """What is wrong, starting with the field."""


@dataclass(frozen=True)
class StopOutsideJob:
    """Stop a training job the queue did not start, because it breaks the policy."""

    training_job_name: str
    violations: tuple[Violation, ...]
    started_by: str | None
    """Who created it, when known (see `limits.started_by`)."""
    reason: str


@dataclass(frozen=True)
class NotifyPolicy:
    """Publish to the policy SNS topic. `subject` is printable ASCII of at most 100 characters, as
    SNS requires of a subject."""

    subject: str
    message: str


@dataclass(frozen=True)
class PutIdleAlarms:
    """Create (or overwrite) the idle-GPU alarms of one training job: PutMetricAlarm requests."""

    training_job_name: str
    requests: tuple[Mapping[str, Any], ...]
    reason: str


@dataclass(frozen=True)
class DeleteIdleAlarms:
    """Delete idle-GPU alarms: at most 100 names, what one DeleteAlarms call takes."""

    alarm_names: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class StopIdleJob:
    """Stop a training job whose GPUs sat idle. A queued job then ends failed with `reason`, and is
    never re-queued: the same code would idle again."""

    training_job_name: str
    job_name: str | None
    """None: a training job outside the queue (watched when `idle.enforce_outside_queue` is on)."""
    attempt: int | None
    reason: str


@dataclass(frozen=True)
class WarnLowUtilization:
    """Tell a queued job's owner that its attempt's GPUs are little used; the job runs on. Recorded
    on the attempt (`Attempt.warned_at`), so an attempt is warned at most once."""

    training_job_name: str
    job_name: str
    attempt: int
    reason: str


@dataclass(frozen=True)
class FallBackToOnDemand:
    """Stop a managed-spot attempt and queue the job again with `request`, its on-demand version,
    which replaces the stored request for good: a job never goes back to spot."""

    job_name: str
    attempt: int
    training_job_name: str
    request: Mapping[str, Any]
    reason: str


@dataclass(frozen=True)
class StayOnSpot:
    """Leave an interrupted managed-spot attempt on spot (SageMaker restarts it) although it was
    interrupted too often: no on-demand pool of the queue could ever hold the job. `reason` becomes
    the running job's reason and stays in its history."""

    job_name: str
    attempt: int
    reason: str


@dataclass(frozen=True)
class RetryAttempt:
    """Close a failed attempt as an infrastructure failure and return the job to the queue for its
    next attempt (it keeps its submission time, so its place in the queue)."""

    job_name: str
    attempt: int
    reason: str


@dataclass(frozen=True)
class FailJob:
    """End the job failed: its attempt closes with `outcome`."""

    job_name: str
    attempt: int
    outcome: AttemptOutcome
    reason: str


GovernanceAction = (
    StopOutsideJob
    | NotifyPolicy
    | PutIdleAlarms
    | DeleteIdleAlarms
    | StopIdleJob
    | WarnLowUtilization
    | FallBackToOnDemand
    | StayOnSpot
    | RetryAttempt
    | FailJob
)
