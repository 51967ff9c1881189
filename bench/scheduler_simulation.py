"""A small discrete-event simulator that drives `decide` the way the scheduler Lambda does.

Time only moves from event to event. Events: a job is submitted, an attempt reaches `InProgress`
(after `start_delay`), an attempt completes, a stop lands (after `stop_delay`). After the events of
one moment the simulator runs one pass and applies its actions through the same lifecycle
functions the service uses. Jobs checkpoint on SIGTERM (as trainer/train.py does), so a preempted
job keeps its progress; a preemption costs the stop and the next start, during which its instances
are held but do no training.

Used by bench/bench_scheduler.py (figures) and tests/scheduling/test_simulation.py (thresholds).
"""

from __future__ import annotations

import heapq
import itertools
import random
import zlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from statistics import mean

from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.domain.states import JobState
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
HOUR = 3600.0


@dataclass(frozen=True)
class Submission:
    name: str
    at: float
    """Seconds after the start of the simulation."""
    priority: int
    demand: Mapping[str, int]
    work: float
    """Seconds of training the job needs once running."""


@dataclass(frozen=True)
class Workload:
    """A seeded random workload: Poisson arrivals, priority classes, sizes and lognormal durations."""

    seed: int = 7
    jobs: int = 300
    pools: Mapping[str, int] = field(default_factory=lambda: {"ml.p5.48xlarge": 8, "ml.g5.xlarge": 16})
    priorities: Mapping[int, float] = field(default_factory=lambda: {0: 0.6, 1: 0.3, 2: 0.1})
    sizes: Sequence[int] = (1, 1, 1, 2, 2, 4, 8)
    """Sampled as fractions of 8: a pool of 16 gets doubled sizes."""
    heterogeneous: float = 0.05
    """Share of jobs that need instances in two pools."""
    mean_work_hours: float = 2.0
    load: float = 0.9
    """Offered instance-hours over capacity-hours during the arrival window."""

    def generate(self) -> list[Submission]:
        rng = random.Random(self.seed)
        pools = list(self.pools)
        classes, weights = list(self.priorities), list(self.priorities.values())
        drafts = []
        for number in range(self.jobs):
            pool = rng.choice(pools)
            scale = max(self.pools[pool] // 8, 1)
            demand = {pool: min(rng.choice(self.sizes) * scale, self.pools[pool])}
            if rng.random() < self.heterogeneous:
                other = rng.choice([name for name in pools if name != pool] or [pool])
                demand[other] = demand.get(other, 0) + 1
            work = rng.lognormvariate(0, 0.8) * self.mean_work_hours * HOUR / 1.377
            drafts.append((f"job-{number:04d}", rng.choices(classes, weights)[0], demand, work))
        offered = sum(sum(demand.values()) * work for _, _, demand, work in drafts)
        window = offered / (sum(self.pools.values()) * self.load)
        at = 0.0
        submissions = []
        for name, priority, demand, work in drafts:
            submissions.append(Submission(name, at, priority, demand, work))
            at += rng.expovariate(self.jobs / window)
        return submissions


@dataclass
class Result:
    waits: dict[int, list[float]]
    """Per priority, each job's total time pending (seconds), over all its attempts."""
    busy_instance_seconds: float
    """Instances held by attempts that are training (state running, not being stopped)."""
    capacity_seconds: float
    idle_while_pending_seconds: float
    """Free instances of a pool while some pending job needs that pool (nothing is refused here)."""
    preemptions: int
    reclaim_stops: int
    """Preemptions whose target was a backfilled job."""
    backfill_starts: int
    reclaim_delays: list[float]
    """For each head that reclaimed backfilled jobs: seconds from the reclaiming stops to its start."""
    makespan: float
    passes: int
    unfinished: list[str]

    @property
    def utilization(self) -> float:
        return self.busy_instance_seconds / self.capacity_seconds

    def mean_wait(self, priority: int) -> float:
        return mean(self.waits[priority]) if self.waits[priority] else 0.0

    def max_wait(self, priority: int) -> float:
        return max(self.waits[priority], default=0.0)


PassObserver = Callable[[Snapshot, SchedulerConfig, Sequence[Action], datetime], None]


@dataclass
class _Run:
    """Mutable state of one run: the jobs, the events to come, and the meters."""

    config: SchedulerConfig
    start_delay: float
    stop_delay: float
    observe: PassObserver | None
    jobs: dict[str, Job] = field(default_factory=dict)
    work_left: dict[str, float] = field(default_factory=dict)
    training_since: dict[str, float] = field(default_factory=dict)
    pending_since: dict[str, float] = field(default_factory=dict)
    waits: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    waited: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    events: list[tuple[float, int, str, str, int]] = field(default_factory=list)
    sequence: itertools.count = field(default_factory=itertools.count)
    busy: float = 0.0
    idle_pending: float = 0.0
    preemptions: int = 0
    reclaim_stops: int = 0
    backfill_starts: int = 0
    reclaims: dict[str, float] = field(default_factory=dict)
    reclaim_delays: list[float] = field(default_factory=list)
    passes: int = 0
    clock: float = 0.0

    def schedule(self, at: float, kind: str, name: str, attempt: int = 0) -> None:
        heapq.heappush(self.events, (at, next(self.sequence), kind, name, attempt))

    def advance(self, to: float) -> None:
        """Integrate the meters over [clock, to): nothing changes between events."""
        span = to - self.clock
        if span > 0:
            self.busy += span * sum(
                sum(job.demand.values()) for job in self.jobs.values() if job.state is JobState.RUNNING
            )
            self.idle_pending += span * self._idle_while_pending()
        self.clock = to

    def _idle_while_pending(self) -> int:
        held: dict[str, int] = defaultdict(int)
        wanted: set[str] = set()
        for job in self.jobs.values():
            if job.is_live:
                for pool, count in job.demand.items():
                    held[pool] += count
            else:
                wanted.update(job.demand)
        return sum(max(self.config.pools[pool] - held[pool], 0) for pool in wanted if pool in self.config.pools)

    def now(self) -> datetime:
        return EPOCH + timedelta(seconds=self.clock)

    def handle(self, kind: str, name: str, attempt: int) -> None:
        job = self.jobs.get(name)
        if job is None or (kind != "submit" and (job.current_attempt is None or job.current_attempt.number != attempt)):
            return
        now = self.now()
        if kind == "submit":
            self.pending_since[name] = self.clock
        elif kind == "in-progress" and job.state is JobState.STARTING:
            self.jobs[name] = lifecycle.mark_running(job, now)
            self.training_since[name] = self.clock
            self.schedule(self.clock + self.work_left[name], "completed", name, attempt)
        elif kind == "completed" and job.state in (JobState.RUNNING, JobState.PREEMPTING):
            self.jobs.pop(name)
            self.training_since.pop(name, None)
            self.waits[job.priority].append(self.waited.pop(name))
        elif kind == "stopped" and job.state is JobState.PREEMPTING:
            self.jobs[name] = lifecycle.requeue(job, now, outcome="preempted", reason="preempted")
            self.pending_since[name] = self.clock

    def run_pass(self) -> None:
        snapshot = Snapshot(jobs=tuple(self.jobs.values()))
        now = self.now()
        actions = decide(snapshot, now, self.config)
        self.passes += 1
        if self.observe is not None:
            self.observe(snapshot, self.config, actions, now)
        for action in actions:
            job = self.jobs[action.job_name]
            if isinstance(action, StartJob):
                self.jobs[job.name] = lifecycle.start(job, now, reason=action.reason, backfill=action.backfill)
                self.waited[job.name] += self.clock - self.pending_since.pop(job.name)
                self.backfill_starts += action.backfill
                if job.name in self.reclaims:
                    self.reclaim_delays.append(self.clock - self.reclaims.pop(job.name))
                self.schedule(self.clock + self.start_delay, "in-progress", job.name, action.attempt)
            elif isinstance(action, PreemptJob):
                self.jobs[job.name] = lifecycle.request_stop(job, now, preempt=True, reason=action.reason)
                self.preemptions += 1
                if job.is_backfill:
                    self.reclaim_stops += 1
                    self.reclaims.setdefault(action.for_job, self.clock)
                if job.name in self.training_since:
                    self.work_left[job.name] -= self.clock - self.training_since.pop(job.name)
                self.schedule(self.clock + self.stop_delay, "stopped", job.name, action.attempt)
            elif isinstance(action, ExplainWait):
                self.jobs[job.name] = lifecycle.explain(job, now, action.reason)


def simulate(
    submissions: Sequence[Submission],
    config: SchedulerConfig,
    *,
    start_delay: float = 300.0,
    stop_delay: float = 120.0,
    observe: PassObserver | None = None,
) -> Result:
    """Run the workload to the end; `observe` sees every pass (snapshot, config, actions, now)."""
    run = _Run(config, start_delay, stop_delay, observe)
    arrivals = {submission.name: submission for submission in submissions}
    for submission in submissions:
        run.schedule(submission.at, "submit", submission.name)
    while run.events:
        moment = run.events[0][0]
        run.advance(moment)
        while run.events and run.events[0][0] == moment:
            _, _, kind, name, attempt = heapq.heappop(run.events)
            if kind == "submit":
                run.jobs[name] = _job(arrivals[name], run.now())
                run.work_left[name] = arrivals[name].work
            run.handle(kind, name, attempt)
        run.run_pass()
    makespan = run.clock
    return Result(
        waits=dict(run.waits),
        busy_instance_seconds=run.busy,
        capacity_seconds=sum(config.pools.values()) * makespan,
        idle_while_pending_seconds=run.idle_pending,
        preemptions=run.preemptions,
        reclaim_stops=run.reclaim_stops,
        backfill_starts=run.backfill_starts,
        reclaim_delays=run.reclaim_delays,
        makespan=makespan,
        passes=run.passes,
        unfinished=sorted(run.jobs),
    )


def _job(submission: Submission, now: datetime) -> Job:
    return Job(
        name=submission.name,
        job_id=f"{zlib.crc32(submission.name.encode()):08x}",
        state=JobState.PENDING,
        priority=submission.priority,
        submitted_at=now,
        demand=dict(submission.demand),
        owner="simulation",
    )


def with_backfill(config: SchedulerConfig, backfill: bool) -> SchedulerConfig:
    return replace(config, backfill=backfill)
