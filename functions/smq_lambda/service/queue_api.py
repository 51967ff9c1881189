"""The use cases behind the REST API, over the ports: submit, read, reprioritize, cancel, pools.

The API never starts or stops SageMaker jobs itself: it records what the user asked for with a
conditional write and kicks the scheduler, whose pass (reserved concurrency 1) acts on it. A kick that
fails is logged by the trigger, not raised: the request is already durable, and the periodic
reconciliation pass acts on it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import TRAINING_JOB_NAME_MAX, TRAINING_JOB_NAME_PATTERN, Job
from smq_lambda.domain.states import LIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import JobConflict, JobNotFound, NotOwner, VersionConflict
from smq_lambda.ports import ConfigSource, JobStore, SchedulerTrigger, TrainingService
from smq_lambda.service.submission import SubmissionPolicy, check_priority, new_job

WRITE_ATTEMPTS = 3
"""A scheduler pass may write the same job between our read and our write (a new wait reason, a
start); re-reading and re-deciding a few times makes that race invisible to the caller."""


@dataclass(frozen=True)
class PositionedJob:
    """A job and its 1-based place among the pending jobs of its pool (None unless pending)."""

    job: Job
    position: int | None


@dataclass(frozen=True)
class PositionedPage:
    jobs: list[PositionedJob]
    next_token: str | None


@dataclass(frozen=True)
class PoolUsage:
    pool: str
    capacity: int | None
    """None: an instance type with no pool while unpooled types are unlimited."""
    in_use: int
    pending: int


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _new_id() -> str:
    return uuid.uuid4().hex


class QueueService:
    """What the API can do to the queue. Dependencies are injected so tests can use fakes or moto."""

    def __init__(
        self,
        store: JobStore,
        config: ConfigSource,
        trigger: SchedulerTrigger,
        *,
        policy: SubmissionPolicy | None = None,
        admin_principals: Collection[str] = frozenset(),
        training: TrainingService | None = None,
        clock: Callable[[], datetime] = _utcnow,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        """`training`, when given, lets `pools()` count instances held by SageMaker jobs started
        outside the queue, as the scheduler does."""
        self._store = store
        self._config = config
        self._trigger = trigger
        self._policy = policy or SubmissionPolicy()
        self._admins = frozenset(admin_principals)
        self._training = training
        self._clock = clock
        self._new_id = new_id

    def submit(self, request: object, caller: str) -> PositionedJob:
        """Queue a CreateTrainingJob request owned by `caller` (InvalidRequest, JobConflict)."""
        job = new_job(
            request,
            owner=caller,
            config=self._config.load(),
            policy=self._policy,
            now=self._clock(),
            job_id=self._new_id(),
        )
        stored = self._store.create(job)
        self._trigger.kick(f"{stored.name} submitted")
        return self._positioned(stored)

    def get(self, name: str) -> PositionedJob:
        return self._positioned(self._load(name))

    def list_jobs(
        self,
        *,
        states: Collection[JobState],
        pool: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
    ) -> PositionedPage:
        """One page in scheduling order; positions cost one index query per pool with pending jobs."""
        page = self._store.list_jobs(states=states, pool=pool, owner=owner, limit=limit, next_token=next_token)
        positions = self._positions(job.pool for job in page.jobs if job.state is JobState.PENDING)
        return PositionedPage(
            jobs=[PositionedJob(job, positions.get((job.pool, job.name))) for job in page.jobs],
            next_token=page.next_token,
        )

    def change_priority(self, name: str, priority: object, caller: str) -> PositionedJob:
        """New priority for an unfinished job; the next pass re-sorts the pool (and may preempt)."""
        value = check_priority(priority)
        job, changed = self._update(name, caller, lambda job, now: _reprioritized(job, now, value))
        if changed:
            self._trigger.kick(f"priority of {name} changed to {value}")
        return self._positioned(job)

    def cancel(self, name: str, caller: str) -> PositionedJob:
        """Pending jobs end at once; a live attempt is marked `stopping` and the pass stops it."""
        job, changed = self._update(name, caller, lambda job, now: _cancelled(job, now, caller))
        if changed:
            self._trigger.kick(f"{name} cancelled")
        return self._positioned(job)

    def pools(self) -> list[PoolUsage]:
        """Every configured pool, plus any instance type that active jobs use without a pool."""
        config = self._config.load()
        active = self._store.active_jobs()
        live = [job for job in active if job.state in LIVE_STATES]
        external: dict[str, int] = {}
        if self._training is not None:
            attempts = [job.current_attempt.training_job_name for job in live if job.current_attempt is not None]
            external = self._training.external_usage(list(config.pools), attempts)
        names = list(config.pools)
        for job in active:
            names.extend(pool for pool in job.demand if pool not in names)
        return [
            PoolUsage(
                pool=pool,
                capacity=config.capacity(pool),
                in_use=sum(job.demand.get(pool, 0) for job in live) + external.get(pool, 0),
                pending=sum(1 for job in active if job.state is JobState.PENDING and pool in job.demand),
            )
            for pool in names
        ]

    def _load(self, name: str) -> Job:
        # A name that could never have been queued is unknown without asking the table, which would
        # refuse some of them (empty or oversized keys) with an error instead of "not found".
        if len(name) > TRAINING_JOB_NAME_MAX or not TRAINING_JOB_NAME_PATTERN.fullmatch(name):
            raise JobNotFound(name)
        job = self._store.get(name)
        if job is None:
            raise JobNotFound(name)
        return job

    def _update(self, name: str, caller: str, change: Callable[[Job, datetime], Job]) -> tuple[Job, bool]:
        """Apply `change` to an unfinished job the caller may act on: 404, then 403, then 409.

        Returns the job as stored and whether anything was written (`change` may return the job
        unchanged when there is nothing to do).
        """
        for _ in range(WRITE_ATTEMPTS):
            job = self._load(name)
            if caller != job.owner and caller not in self._admins:
                raise NotOwner(name, caller)
            if job.state in TERMINAL_STATES:
                raise JobConflict(name, f"job {name!r} is already {job.state}: a finished job cannot be changed")
            updated = change(job, self._clock())
            if updated is job:
                return job, False
            try:
                return self._store.save(updated, expected_version=job.version), True
            except VersionConflict:
                continue
        raise VersionConflict(name)

    def _positioned(self, job: Job) -> PositionedJob:
        if job.state is not JobState.PENDING:
            return PositionedJob(job, None)
        return PositionedJob(job, self._positions([job.pool]).get((job.pool, job.name)))

    def _positions(self, pools: Iterable[str]) -> dict[tuple[str, str], int]:
        positions: dict[tuple[str, str], int] = {}
        for pool in dict.fromkeys(pools):
            for index, queued in enumerate(self._store.pending_in_pool(pool), start=1):
                positions[(pool, queued.name)] = index
        return positions



def _reprioritized(job: Job, now: datetime, priority: int) -> Job:
    return job if job.priority == priority else lifecycle.reprioritize(job, now, priority)


def _cancelled(job: Job, now: datetime, caller: str) -> Job:
    if job.state is JobState.PENDING:
        return lifecycle.cancel_pending(job, now, by=caller)
    if job.state is JobState.STOPPING:
        return job
    return lifecycle.request_stop(job, now, preempt=False, reason=f"cancelled by {caller}; stopping")
