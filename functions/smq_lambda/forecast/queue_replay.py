"""The queue as it stands, instead of a trace, in virtual time (replay/virtual_queue.py): the real
jobs of a snapshot (pending, starting, running, stopping), replayed forward with the real `decide`.

What the replay assumes, beyond the durations its caller gives (see `estimate`):

* virtual time starts at `now` (the passes see real times: backoffs, minimum runtimes and aging
  count as they will); no job arrives, no job is cancelled, no attempt is interrupted or fails;
* start-up takes no time (an attempt trains from the moment it starts), a stop lands `stop_s`
  after it was sent, and a stopped job resumes from where it stopped (it checkpoints);
* instances held outside the queue stay held, and the teams' past use stays what it is now;
* with hold budgets, each team's spend this month is what the pass read plus what the attempts that
  end in the replay cost (priced on demand, as the pass prices a live job): a job its budget holds
  stays held as its team's running jobs end, and a job is held once its team starts those ahead of
  it (scheduling/budget_hold.py). Budgets are not raised, and the month does not reset;
* a pass runs after each moment that changed something, when a start backoff ends, when a
  running job's minimum runtime ends and when a training plan's window opens or closes (the moments
  a pass could decide differently); aging is evaluated at those passes only.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from smq_lambda.domain.config.plan_document import plan_pools
from smq_lambda.domain.costs.costs import accrued_cost
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.replay.events import Event, Timing
from smq_lambda.replay.progress import Progress
from smq_lambda.replay.timeline import Segment
from smq_lambda.replay.trace_job import DEFAULT_STOP_S, TraceJob
from smq_lambda.replay.virtual_queue import VirtualQueue
from smq_lambda.scheduling.actions import Action, StartJob
from smq_lambda.scheduling.budget_hold import budget_team
from smq_lambda.scheduling.decide import decide_pass
from smq_lambda.scheduling.plan_windows import boundaries
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

REPLAY_TIMING = Timing(start_min_s=0.0, start_max_s=0.0, pass_delay_s=0.0)
RESUME_GRANULARITY_S = 1.0
"""A stopped job keeps its training to the second (as if it checkpointed continuously)."""


class Replay(VirtualQueue):
    """One replay of `snapshot` from `now` under `config`.

    `durations`: the training each job of the snapshot still needs once it trains, in seconds
    (math.inf: it never ends). `targets`: the pending jobs whose starts are wanted; the replay is
    done when all of them started (`started`, in seconds after `now`).
    """

    def __init__(
        self,
        snapshot: Snapshot,
        now: datetime,
        config: SchedulerConfig,
        durations: Mapping[str, float],
        targets: Collection[str],
        *,
        stop_s: float = DEFAULT_STOP_S,
    ) -> None:
        super().__init__(
            (),
            replay_pools(snapshot, config),
            self._decide,
            timing=REPLAY_TIMING,
        )
        self.start = now
        self.config = config
        self.team_usage = dict(snapshot.team_usage)
        self.spot_rates = dict(snapshot.spot_rates)
        """The spot interruption rates the pass decided with: a replay keeps them (adaptive spot)."""
        self.team_spend = None if snapshot.team_spend is None else dict(snapshot.team_spend)
        """Each team's spend this month, as the hold budgets see it (None: no budget holds a job)."""
        self.prices = snapshot.prices
        self.budget_held: frozenset[str] = frozenset()
        """The jobs the last pass held for their team's budget."""
        self.outside.update({pool: count for pool, count in snapshot.external_usage.items() if count > 0})
        self.waiting = set(targets)
        self.started: dict[str, float] = {}
        self.finished_in: dict[str, list[str]] = {}
        """Per pool, the jobs that completed there, in order."""
        self.ahead: dict[str, frozenset[str]] = {}
        """Per started target, the jobs that completed in its pools before it started: the durations
        its start depends on."""
        self._wakes: set[float] = set()
        for job in snapshot.jobs:
            self._seed(job, durations[job.name], stop_s)
        for moment in boundaries(config, now):
            self._wake(self._at(moment))
        self._schedule(0.0, Event.PASS, "")

    def done(self) -> bool:
        return not self.waiting

    def _snapshot(self) -> Snapshot:
        spend = None if self.team_spend is None else dict(self.team_spend)
        return replace(super()._snapshot(), spot_rates=self.spot_rates, team_spend=spend, prices=self.prices)

    def _decide(self, view: Snapshot, at: datetime) -> list[Action]:
        decision = decide_pass(view, at, self.config)
        self.budget_held = decision.budget_held
        return decision.actions

    def _spend(self, job: Job) -> None:
        """The job's attempt ends: what it cost is its team's spend from now on, as the cost records
        keep an ended attempt (a pass counts a live job's cost as committed instead)."""
        if self.team_spend is None:
            return
        usd = accrued_cost(job, self._now(), self.prices)
        if usd:
            team = budget_team(job)
            self.team_spend[team] = self.team_spend.get(team, 0.0) + usd

    def still_holding(self) -> list[Job]:
        """The live jobs when the replay ended."""
        return [job for job in self.jobs.values() if job.is_live]

    def _at(self, moment: datetime) -> float:
        return (moment - self.start).total_seconds()

    def _now(self) -> datetime:
        return self.start + timedelta(seconds=self.clock)

    def _schedule(self, at: float, kind: Event, name: str, token: int = 0) -> None:
        if kind is Event.READY and at <= self.clock:
            self._handle(kind, name, token)  # start-up takes no time: it trains at once, with no pass of its own
        else:
            super()._schedule(at, kind, name, token)

    def _seed(self, job: Job, duration_s: float, stop_s: float) -> None:
        trace = TraceJob(
            name=job.name,
            submit_s=self._at(job.submitted_at),
            priority=job.priority,
            pool=job.where.pool,
            instances=job.where.instances,
            duration_s=duration_s,
            team=job.team,
            checkpoint_every_s=RESUME_GRANULARITY_S,
            stop_s=stop_s,
        )
        self.jobs[job.name] = job
        self.progress[job.name] = Progress(trace, pending_since=None if job.is_live else 0.0)
        attempt = job.current_attempt
        if not job.is_live or attempt is None:
            if job.not_before is not None and job.not_before > self.start:
                self._wake(self._at(job.not_before))
            return
        self.open_segments[(job.name, attempt.number)] = Segment(
            job=job.name,
            attempt=attempt.number,
            team=job.team,
            priority=job.priority,
            pool=job.where.pool,
            slots=self.slots.take(job.where.pool, job.where.instances),
            start_s=self._at(attempt.started_at),
            backfill=attempt.backfill,
        )
        if job.state is JobState.STARTING:
            self._schedule(0.0, Event.READY, job.name, attempt.number)
        elif job.state is JobState.RUNNING:
            self._train(job.name)
        else:
            stop_sent = self._at(job.updated_at or self.start)
            self._schedule(max(stop_sent + stop_s, 0.0), Event.STOPPED, job.name, attempt.number)

    def _wake(self, at: float) -> None:
        """A pass at `at`, once, though nothing else happens then."""
        if at not in self._wakes and math.isfinite(at):
            self._wakes.add(at)
            self._schedule(at, Event.PASS, "")

    def _pass(self) -> list[Action]:
        actions = super()._pass()
        min_runtime_s = self.config.preemption.min_runtime_s
        if not (min_runtime_s and self.waiting):
            return actions
        for job in self.jobs.values():
            attempt = job.current_attempt
            if job.state in (JobState.STARTING, JobState.RUNNING) and attempt is not None:
                protected_until = self._at(attempt.started_at) + min_runtime_s
                if protected_until > self.clock:
                    self._wake(protected_until)
        return actions

    def _start(self, job: Job, action: StartJob) -> bool:
        if not super()._start(job, action):
            return False
        if job.name in self.waiting:
            self.waiting.discard(job.name)
            self.started[job.name] = self.clock
            held = self.jobs[job.name].demand  # where it started: a spot job's spot pool, not where it was listed
            self.ahead[job.name] = frozenset(name for pool in held for name in self.finished_in.get(pool, ()))
        return True

    def _complete(self, job: Job) -> None:
        self._spend(job)
        for pool in job.demand:
            self.finished_in.setdefault(pool, []).append(job.name)
        super()._complete(job)

    def _stop_landed(self, job: Job) -> None:
        """A stop lands and its attempt ends: a preempted job waits again; a cancel (or a governance
        stop) sent before the replay began leaves the job gone."""
        self._spend(job)
        attempt = job.current_attempt
        if job.state is not JobState.STOPPING or attempt is None:
            super()._stop_landed(job)
            return
        self._close_segment(job.name, attempt.number, "stopped")
        del self.jobs[job.name]


def replay_pools(snapshot: Snapshot, config: SchedulerConfig) -> dict[str, int]:
    """Instances per pool the replay's SageMaker has: the configured pools, and for an instance type
    without a pool, as many as every job of the snapshot and the outside jobs need together when
    unpooled types are unlimited (so no start is refused), else none. A training plan's pool has its
    instances whether or not a window is open: the passes start nothing there outside one."""
    pools = {**config.pools, **plan_pools(config.training_plans)}
    for job in snapshot.jobs:
        for pool, count in job.demand.items():
            if pool not in config.pools:
                pools[pool] = pools.get(pool, 0) + (count if config.capacity(pool) is None else 0)
    for pool, count in snapshot.external_usage.items():
        if pool not in config.pools and config.capacity(pool) is None:
            pools[pool] = pools.get(pool, 0) + max(count, 0)
    return pools
