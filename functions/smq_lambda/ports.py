"""The edges the queue talks to, as Protocols. Adapters implement them; tests use in-memory fakes."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from smq_lambda.domain.model import Job
from smq_lambda.domain.states import JobState
from smq_lambda.scheduling.snapshot import SchedulerConfig


@dataclass(frozen=True)
class JobPage:
    jobs: list[Job]
    next_token: str | None


class JobStore(Protocol):
    """The queue table. Every write is conditional; a lost race raises VersionConflict."""

    def create(self, job: Job) -> Job:
        """Insert a new job (version 1). Replaces a finished job of that name; an unfinished one
        raises JobConflict."""
        ...

    def get(self, name: str) -> Job | None: ...

    def save(self, job: Job, *, expected_version: int) -> Job:
        """Write `job` (whose version is expected_version + 1) if the stored version is still
        `expected_version`."""
        ...

    def active_jobs(self) -> list[Job]:
        """Every pending and live job, in scheduling order (index queries, never a scan)."""
        ...

    def pending_in_pool(self, pool: str) -> list[Job]:
        """A pool's pending jobs in scheduling order: one paginated Query of the pending index."""
        ...

    def list_jobs(
        self,
        *,
        states: Collection[JobState],
        pool: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
    ) -> JobPage: ...


@dataclass(frozen=True)
class TrainingJobStatus:
    """The parts of DescribeTrainingJob (or a state-change event) the queue acts on."""

    name: str
    status: str
    secondary_status: str | None = None
    failure_reason: str | None = None
    tags: Mapping[str, str] | None = None
    end_time: datetime | None = None


class TrainingService(Protocol):
    """SageMaker training jobs."""

    def start_attempt(self, job: Job) -> None:
        """Create the job's current attempt. Idempotent: the attempt already existing is success.
        Raises StartRefused (lasting or transient)."""
        ...

    def stop(self, training_job_name: str) -> None:
        """Ask SageMaker to stop; a job that is already ending or gone is fine."""
        ...

    def describe(self, training_job_name: str) -> TrainingJobStatus | None:
        """None when SageMaker has no job of that name."""
        ...

    def external_usage(self, pools: Collection[str], queue_attempts: Collection[str]) -> dict[str, int]:
        """Instances per pool held by in-progress SageMaker jobs that are not queue attempts."""
        ...


class ConfigSource(Protocol):
    def load(self) -> SchedulerConfig: ...


class SchedulerTrigger(Protocol):
    def kick(self, reason: str) -> None:
        """Ask for a scheduling pass soon (asynchronously)."""
        ...


class PassLease(Protocol):
    """Serializes scheduling passes: only a pass holding the lease may start jobs.

    A pass that finds the lease taken asks the holder to run once more instead of waiting, so a
    change that arrives during a pass is never left unscheduled.
    """

    def try_acquire(self, owner: str, now: datetime) -> bool: ...

    def request_rerun(self) -> None: ...

    def release(self, owner: str) -> bool:
        """True when released; False when a rerun was requested meanwhile (the flag is cleared and
        the caller still holds the lease and must run another pass)."""
        ...

    def abandon(self, owner: str) -> None:
        """Give the lease up after a failed pass, leaving any rerun request for the next holder."""
        ...
