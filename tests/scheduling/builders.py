"""Small fluent builders for scheduling tests, a fixed clock, and a helper that plays actions back.

    snap = queue().running("job1", priority=1).pending("job4", priority=3).build()

Jobs get submission times in the order they are added, one minute apart, so the order of a
builder chain is the submission order. `JobBuilder` alone takes any submission time (the property
tests use it that way).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Attempt, Job, attempt_name
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot, UnpooledPolicy

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"
TRN = "ml.trn1.32xlarge"
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
"""When the first job of a builder chain is submitted."""


class FakeClock:
    """An injected clock that moves only when a test moves it."""

    def __init__(self, start: datetime = T0 + timedelta(hours=1)) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now


NOW = FakeClock().now()
"""The moment every table case decides at."""


def pools(backfill: bool = False, unlimited: bool = False, **capacities: int) -> SchedulerConfig:
    """`pools(p5=2, g5=8)`: short keys for the pool constants above, or full instance types."""
    names = {"p5": P5, "g5": G5, "trn": TRN}
    return SchedulerConfig(
        pools={names.get(key, key): count for key, count in capacities.items()},
        unpooled=UnpooledPolicy.UNLIMITED if unlimited else UnpooledPolicy.REJECT,
        backfill=backfill,
    )


class JobBuilder:
    """One job; every method returns the builder."""

    def __init__(self, name: str, submitted_at: datetime) -> None:
        self._job = Job(
            name=name,
            job_id=hashlib.sha1(name.encode()).hexdigest()[:12],
            state=JobState.PENDING,
            priority=0,
            submitted_at=submitted_at,
            demand={P5: 1},
            owner="arn:aws:iam::123456789012:user/alice",
        )
        self._demand: dict[str, int] = {}

    def priority(self, priority: int) -> JobBuilder:
        self._job = replace(self._job, priority=priority)
        return self

    def needs(self, count: int, pool: str = P5) -> JobBuilder:
        """Add an instance group; call twice for a heterogeneous job."""
        self._demand[pool] = self._demand.get(pool, 0) + count
        return self

    def team(self, team: str | None) -> JobBuilder:
        self._job = replace(self._job, team=team)
        return self

    def prefers(self, *placements: tuple[str, int]) -> JobBuilder:
        """A flexible job: instance preferences (type, count) in order; listed under the first."""
        self._job = replace(self._job, placements=tuple(Placement(pool, count) for pool, count in placements))
        first_pool, first_count = placements[0]
        self._demand = {first_pool: first_count}
        return self

    def reason(self, reason: str | None) -> JobBuilder:
        self._job = replace(self._job, reason=reason)
        return self

    def past_attempts(self, count: int) -> JobBuilder:
        """Earlier attempts that ended (preempted), so the next attempt number moves on."""
        attempts = tuple(
            Attempt(
                number=number,
                training_job_name=attempt_name(self._job.name, self._job.job_id, number),
                started_at=self._job.submitted_at + timedelta(minutes=number),
                ended_at=self._job.submitted_at + timedelta(minutes=number, seconds=30),
                outcome="preempted",
            )
            for number in range(1, count + 1)
        )
        self._job = replace(self._job, attempts=attempts)
        return self

    def live(
        self, state: JobState, started_at: datetime | None = None, backfill: bool = False, at: int | None = None
    ) -> JobBuilder:
        """An open attempt in a live state, started at `started_at` (default: `number` minutes after
        submission, like the past attempts); a flexible job's at its preference `at` (from 1)."""
        number = len(self._job.attempts) + 1
        placement = self._job.placements[at - 1] if at is not None else None
        if placement is not None:
            self._demand = dict(placement.demand)
        attempt = Attempt(
            number=number,
            training_job_name=attempt_name(self._job.name, self._job.job_id, number),
            started_at=started_at or self._job.submitted_at + timedelta(minutes=number),
            backfill=backfill,
            placement=placement,
        )
        self._job = replace(self._job, state=state, attempts=(*self._job.attempts, attempt))
        return self

    def backoff(self, until: datetime, cause: str = "ThrottlingException") -> JobBuilder:
        """A transient start refusal: pending, not to be retried before `until`."""
        number = len(self._job.attempts) + 1
        refused = Attempt(
            number=number,
            training_job_name=attempt_name(self._job.name, self._job.job_id, number),
            started_at=until - timedelta(seconds=30),
            ended_at=until - timedelta(seconds=15),
            outcome="refused",
            reason=cause,
        )
        self._job = replace(self._job, attempts=(*self._job.attempts, refused), not_before=until, start_failures=1)
        return self

    def build(self) -> Job:
        return replace(self._job, demand=dict(self._demand) or {P5: 1})


class QueueBuilder:
    """A snapshot: jobs in submission order, plus instances held by jobs outside the queue."""

    def __init__(self) -> None:
        self._jobs: list[JobBuilder] = []
        self._external: dict[str, int] = {}

    def pending(
        self,
        name: str,
        priority: int = 0,
        needs: Mapping[str, int] | None = None,
        reason: str | None = None,
        backoff_until: datetime | None = None,
        past_attempts: int = 0,
        team: str | None = None,
        prefers: tuple[tuple[str, int], ...] = (),
    ) -> QueueBuilder:
        builder = self._add(name, priority, needs).reason(reason).past_attempts(past_attempts).team(team)
        if prefers:
            builder.prefers(*prefers)
        if backoff_until is not None:
            builder.backoff(backoff_until)
        return self

    def running(
        self,
        name: str,
        priority: int = 0,
        needs: Mapping[str, int] | None = None,
        started_at: datetime | None = None,
        backfill: bool = False,
        state: JobState = JobState.RUNNING,
        past_attempts: int = 0,
        team: str | None = None,
        prefers: tuple[tuple[str, int], ...] = (),
        at: int | None = None,
    ) -> QueueBuilder:
        """A live job; a flexible one (`prefers`) runs at its preference `at` (from 1)."""
        builder = self._add(name, priority, needs).past_attempts(past_attempts).team(team)
        if prefers:
            builder.prefers(*prefers)
        builder.live(state, started_at, backfill, at)
        return self

    def preempting(
        self, name: str, priority: int = 0, needs: Mapping[str, int] | None = None, team: str | None = None
    ) -> QueueBuilder:
        return self.running(name, priority, needs, state=JobState.PREEMPTING, team=team)

    def stopping(self, name: str, priority: int = 0, needs: Mapping[str, int] | None = None) -> QueueBuilder:
        return self.running(name, priority, needs, state=JobState.STOPPING)

    def starting(self, name: str, priority: int = 0, needs: Mapping[str, int] | None = None) -> QueueBuilder:
        return self.running(name, priority, needs, state=JobState.STARTING)

    def external(self, pool: str, count: int) -> QueueBuilder:
        self._external[pool] = count
        return self

    def build(self) -> Snapshot:
        return Snapshot(jobs=tuple(builder.build() for builder in self._jobs), external_usage=dict(self._external))

    def _add(self, name: str, priority: int, needs: Mapping[str, int] | None) -> JobBuilder:
        """Add a job, submitted one minute after the previous one."""
        builder = JobBuilder(name, T0 + timedelta(minutes=len(self._jobs))).priority(priority)
        self._jobs.append(builder)
        for pool, count in (needs or {P5: 1}).items():
            builder.needs(count, pool)
        return builder


def queue() -> QueueBuilder:
    return QueueBuilder()


def apply(snapshot: Snapshot, actions: Iterable[Action], now: datetime) -> Snapshot:
    """Play a pass's actions back the way the service would, through the lifecycle functions."""
    jobs = {job.name: job for job in snapshot.jobs}
    for action in actions:
        job = jobs[action.job_name]
        match action:
            case StartJob():
                jobs[job.name] = lifecycle.start(
                    job, now, reason=action.reason, backfill=action.backfill, placement=action.placement
                )
            case PreemptJob():
                jobs[job.name] = lifecycle.request_stop(job, now, preempt=True, reason=action.reason)
            case ExplainWait():
                jobs[job.name] = lifecycle.explain(job, now, action.reason)
    return replace(snapshot, jobs=tuple(jobs.values()))


def event(snapshot: Snapshot, name: str, now: datetime, *, to: JobState) -> Snapshot:
    """SageMaker reported on `name`'s attempt: running, stopped (back to pending) or completed."""
    jobs = []
    for job in snapshot.jobs:
        if job.name == name:
            if to is JobState.RUNNING:
                job = lifecycle.mark_running(job, now)
            elif to is JobState.PENDING:
                job = lifecycle.requeue(job, now, outcome="preempted", reason="preempted; waiting to resume")
            else:
                job = lifecycle.finish(job, to, now, outcome=str(to), reason=None)
        if job.state in (JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED):
            continue
        jobs.append(job)
    return replace(snapshot, jobs=tuple(jobs))
