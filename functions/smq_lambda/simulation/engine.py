"""A discrete-event simulation of the queue in virtual time, driving a policy's real pass.

Time moves from event to event: a job is submitted; an attempt's instances are ready and it starts
training; it completes; a spot interruption hits it and it restarts; a stop lands. After the events
of one moment a pass runs (`pass_delay_s` later, when set, modelling the scheduler queue's batching
window), and its actions are applied through the same lifecycle functions the service uses; the
smq policy also gets the spot fallback of the governance rules. Start-up and restart times are drawn
from a seeded generator, so one seed gives one run, bit for bit.

The engine also plays SageMaker: a start the pool has no room for is refused (a policy that counts
badly, like the seed's, gets this), and the rest of that pass is lost.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.domain.outcomes import AttemptOutcome
from smq_lambda.domain.states import LIVE_STATES, RELEASING_STATES, JobState
from smq_lambda.domain.teams import Teams
from smq_lambda.governance.actions import FallBackToOnDemand
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.spot import decide_spot_fallback
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.simulation.events import DEFAULT_TIMING, Event, Timing
from smq_lambda.simulation.metrics import Meters, Moment, fits, percentiles
from smq_lambda.simulation.policies import PolicyFunction, PolicyName, policy
from smq_lambda.simulation.progress import Progress
from smq_lambda.simulation.teams import SimulatedTeams
from smq_lambda.simulation.timeline import Segment, Slots
from smq_lambda.simulation.trace import TraceJob, check_pools

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


PassObserver = Callable[[Snapshot, Sequence[Action], datetime], None]
"""Sees every pass: the snapshot it decided over, its actions, and the virtual time."""


@dataclass
class Result:
    metrics: dict[str, Any]
    segments: list[Segment]


class Simulation:
    def __init__(
        self,
        trace: Sequence[TraceJob],
        pools: Mapping[str, int],
        policy: PolicyFunction,
        *,
        governed: bool,
        timing: Timing,
        observe: PassObserver | None = None,
    ) -> None:
        self.observe = observe
        self.trace = {job.name: job for job in trace}
        self.pools = dict(pools)
        self.policy = policy
        self.governed = governed
        self.timing = timing
        self.random = random.Random(timing.seed)
        self.clock = 0.0
        self.events: list[tuple[float, int, int, str, int]] = []
        self.sequence = itertools.count()
        self.jobs: dict[str, Job] = {}
        self.progress: dict[str, Progress] = {}
        self.outside: Counter[str] = Counter()
        self.slots = Slots(self.pools)
        self.open_segments: dict[tuple[str, int], Segment] = {}
        self.segments: list[Segment] = []
        self.meters = Meters.for_pools(self.pools)
        self.waits: dict[int, list[float]] = {}
        self.counts: Counter[str] = Counter()
        self.lost: dict[str, float] = {"preemption": 0.0, "interruption": 0.0}
        self.pass_scheduled = False
        self.team_usage: Mapping[str, float] = {}  # what every pass sees of the teams' past use
        self.teams = SimulatedTeams.off()  # simulate() gives it the teams of a configuration with quotas

    def run(self) -> Result:
        for job in self.trace.values():
            self._schedule(job.submit_s, Event.SUBMITTED, job.name)
        self.play()
        self.meters.finish(self.clock)
        return Result(self._metrics(), sorted(self.segments, key=lambda s: (s.start_s, s.job, s.pool)))

    def play(self, *, until_s: float = math.inf, max_events: int | None = None) -> int:
        """Handle events, a pass after each moment's, until none is left, the next lies past `until_s`,
        `max_events` were handled (checked between moments) or `done()`; returns the events handled."""
        handled = 0
        while self.events and self.events[0][0] <= until_s and not self.done():
            if max_events is not None and handled >= max_events:
                break
            moment = self.events[0][0]
            self._advance(moment)
            changed = False
            while self.events and self.events[0][0] == moment:
                _, kind, _, name, token = heapq.heappop(self.events)
                changed |= kind != Event.PASS
                handled += 1
                self._handle(Event(kind), name, token)
            if changed and not self.pass_scheduled:
                self.pass_scheduled = True
                self._schedule(self.clock + self.timing.pass_delay_s, Event.PASS, "")
        return handled

    def done(self) -> bool:
        return False  # a whole replay runs until its events run out; a partial one says when it is done

    def _schedule(self, at: float, kind: Event, name: str, token: int = 0) -> None:
        heapq.heappush(self.events, (at, int(kind), next(self.sequence), name, token))

    def _now(self) -> datetime:
        return EPOCH + timedelta(seconds=self.clock)

    def _advance(self, to: float) -> None:
        if to > self.clock:
            self.meters.observe(Moment.of(self.pools, self.outside, self.jobs.values()), self.clock, to)
            self.teams.observe(self.jobs.values(), self.clock, to)
        self.clock = to

    def _handle(self, kind: Event, name: str, token: int) -> None:
        if kind is Event.PASS:
            self.pass_scheduled = False
            self._pass()
            return
        if kind is Event.SUBMITTED:
            self._submit(self.trace[name])
            return
        if kind is Event.RELEASED:
            self._release_outside(name, token)
            return
        job = self.jobs.get(name)
        if job is None:
            return
        if kind is Event.READY and self._current(job, token) and job.state is JobState.STARTING:
            self.jobs[name] = lifecycle.mark_running(job, self._now())
            self.open_segments[(name, token)].running_s = self.clock
            self._train(name)
        elif kind is Event.RESUMED and self._current(job, token) and job.state is JobState.RUNNING:
            self._train(name)
        elif kind is Event.INTERRUPTED and token == self.progress[name].epoch:
            self._interrupt(job)
        elif kind is Event.COMPLETED and token == self.progress[name].epoch:
            self._complete(job)
        elif kind is Event.STOPPED and self._current(job, token) and job.state in RELEASING_STATES:
            self._stop_landed(job)

    @staticmethod
    def _current(job: Job, attempt: int) -> bool:
        return job.current_attempt is not None and job.current_attempt.number == attempt

    def _submit(self, trace: TraceJob) -> None:
        request: dict[str, Any] = {"EnableManagedSpotTraining": True} if trace.is_spot else {}
        self.jobs[trace.name] = Job(
            name=trace.name,
            job_id=f"{zlib.crc32(trace.name.encode()):08x}",
            state=JobState.PENDING,
            priority=trace.priority,
            submitted_at=self._now(),
            demand={trace.pool: trace.instances},
            owner=trace.team or "simulation",
            team=trace.team,
            request=request,
        )
        self.progress[trace.name] = Progress(trace, interruptions=list(trace.interruptions_s), pending_since=self.clock)

    def _pass(self) -> None:
        self.team_usage = self.teams.usage(self.team_usage, self.jobs.values(), self.clock)
        active = tuple(job for job in self.jobs.values() if job.state is JobState.PENDING or job.is_live)
        snapshot = Snapshot(jobs=active, external_usage=dict(self.outside), team_usage=self.team_usage)
        actions = self.policy(snapshot, self._now())
        self.counts["passes"] += 1
        if self.observe is not None:
            self.observe(snapshot, actions, self._now())
        for action in actions:
            if not self._apply(action):
                break
        self.teams.decided(actions, self.jobs, self.clock)

    def _apply(self, action: Action) -> bool:
        """Apply one action; False when SageMaker refused a start (the pass ends there)."""
        job = self.jobs[action.job_name]
        if isinstance(action, ExplainWait):
            self.jobs[job.name] = lifecycle.explain(job, self._now(), action.reason)
        elif isinstance(action, StartJob):
            return self._start(job, action)
        elif isinstance(action, PreemptJob):
            self._preempt(job)
        return True

    def _start(self, job: Job, action: StartJob) -> bool:
        held = self._held()
        free = {pool: self.pools.get(pool, 0) - held[pool] for pool in job.demand}
        if job.state is not JobState.PENDING or not fits(job.demand, free):
            self.counts["refused_starts"] += 1
            return False
        started = lifecycle.start(job, self._now(), reason=action.reason, backfill=action.backfill)
        self.jobs[job.name] = started
        progress = self.progress[job.name]
        if progress.pending_since is not None:  # 0.0 is the trace's first moment, not "never"
            progress.waited += self.clock - progress.pending_since
        progress.pending_since = None
        self.counts["starts"] += 1
        self.counts["backfill_starts"] += action.backfill
        pool, count = next(iter(job.demand.items()))
        segment = Segment(
            job=job.name,
            attempt=action.attempt,
            team=progress.trace.team,
            priority=job.priority,
            pool=pool,
            slots=self.slots.take(pool, count),
            start_s=self.clock,
            backfill=action.backfill,
        )
        self.open_segments[(job.name, action.attempt)] = segment
        self._schedule(self.clock + self._startup(), Event.READY, job.name, action.attempt)
        return True

    def _held(self) -> Counter[str]:
        held: Counter[str] = Counter(self.outside)
        for job in self.jobs.values():
            if job.state in LIVE_STATES:
                held.update(job.demand)
        return held

    def _startup(self) -> float:
        return self.random.uniform(self.timing.start_min_s, self.timing.start_max_s)

    def _train(self, name: str) -> None:
        """Training (re)starts: schedule whichever comes first, completion or the next interruption."""
        progress = self.progress[name]
        progress.epoch += 1
        progress.training_since = self.clock
        to_finish = progress.trace.duration_s - progress.kept
        if progress.interruptions and progress.interruptions[0] - progress.trained < to_finish:
            self._schedule(
                self.clock + progress.interruptions[0] - progress.trained, Event.INTERRUPTED, name, progress.epoch
            )
        else:
            self._schedule(self.clock + to_finish, Event.COMPLETED, name, progress.epoch)

    def _halt(self, name: str, cause: str) -> float:
        """Training stops now and falls back to the last checkpoint; the work lost is returned."""
        progress = self.progress[name]
        progress.epoch += 1
        if progress.training_since is None:
            return 0.0
        reached = progress.at(self.clock)
        progress.trained += self.clock - progress.training_since
        progress.training_since = None
        progress.kept = progress.saved(reached)
        lost = reached - progress.kept
        self.lost[cause] += lost
        return lost

    def _preempt(self, job: Job) -> None:
        attempt = job.current_attempt
        assert attempt is not None
        self.jobs[job.name] = lifecycle.request_stop(job, self._now(), preempt=True, reason="preempted")
        self.counts["preemptions"] += 1
        segment = self.open_segments[(job.name, attempt.number)]
        segment.stop_s = self.clock
        segment.lost_work_s += self._halt(job.name, "preemption")
        self._schedule(self.clock + self.progress[job.name].trace.stop_s, Event.STOPPED, job.name, attempt.number)

    def _stop_landed(self, job: Job) -> None:
        attempt = job.current_attempt
        assert attempt is not None
        self.jobs[job.name] = lifecycle.requeue(job, self._now(), outcome=AttemptOutcome.PREEMPTED, reason="preempted")
        self.progress[job.name].pending_since = self.clock
        self._close_segment(job.name, attempt.number, "preempted")

    def _interrupt(self, job: Job) -> None:
        attempt = job.current_attempt
        assert attempt is not None
        progress = self.progress[job.name]
        segment = self.open_segments[(job.name, attempt.number)]
        progress.interruptions.pop(0)
        segment.interruptions.append(self.clock)
        segment.lost_work_s += self._halt(job.name, "interruption")
        self.counts["interruptions"] += 1
        fallback = self._spot_fallback(job, len(segment.interruptions)) if self.governed else None
        if fallback is None:
            self._schedule(self.clock + self._startup(), Event.RESUMED, job.name, attempt.number)
            return
        self.jobs[job.name] = lifecycle.fall_back_to_on_demand(
            job, self._now(), request=fallback.request, reason=fallback.reason
        )
        self.counts["spot_fallbacks"] += 1
        progress.interruptions.clear()
        progress.pending_since = self.clock
        segment.stop_s = self.clock
        self.outside.update(job.demand)
        self._schedule(self.clock + progress.trace.stop_s, Event.RELEASED, job.name, attempt.number)

    def _spot_fallback(self, job: Job, interruptions: int) -> FallBackToOnDemand | None:
        attempt = job.current_attempt
        assert attempt is not None
        description = {
            "TrainingJobName": attempt.training_job_name,
            "TrainingJobStatus": "InProgress",
            "SecondaryStatusTransitions": [{"Status": "Interrupted"}] * interruptions,
        }
        return decide_spot_fallback(job, description, Policy())

    def _release_outside(self, name: str, attempt: int) -> None:
        trace = self.trace[name]
        self.outside[trace.pool] -= trace.instances
        if self.outside[trace.pool] <= 0:
            del self.outside[trace.pool]
        self._close_segment(name, attempt, "spot_fallback")

    def _complete(self, job: Job) -> None:
        attempt = job.current_attempt
        assert attempt is not None
        progress = self.progress[job.name]
        progress.training_since = None
        self.jobs[job.name] = lifecycle.finish(
            job, JobState.COMPLETED, self._now(), outcome=AttemptOutcome.COMPLETED, reason=None
        )
        self.meters.keep_training(job.demand, progress.trace.duration_s)
        self.waits.setdefault(job.priority, []).append(progress.waited)
        self._close_segment(job.name, attempt.number, "completed")
        del self.jobs[job.name]

    def _close_segment(self, name: str, attempt: int, outcome: str) -> None:
        segment = self.open_segments.pop((name, attempt))
        segment.end_s = self.clock
        segment.outcome = outcome
        self.slots.give_back(segment.pool, segment.slots)
        self.segments.append(segment)

    def _metrics(self) -> dict[str, Any]:
        makespan = self.clock
        unfinished = sorted(self.jobs)
        for name in unfinished:
            progress = self.progress[name]
            if progress.pending_since is not None:
                progress.waited += makespan - progress.pending_since
            self.waits.setdefault(self.jobs[name].priority, []).append(progress.waited)
        return {
            "jobs": len(self.trace),
            "pools": {pool: meter.report(makespan) for pool, meter in self.meters.pools.items()},
            "wait_s": {
                str(priority): percentiles(self.waits[priority]) for priority in sorted(self.waits, reverse=True)
            },
            "preemptions": self.counts["preemptions"],
            "lost_work_s": round(sum(self.lost.values()), 3),
            "lost_work_by_cause_s": {cause: round(lost, 3) for cause, lost in self.lost.items()},
            "inversion_s": round(self.meters.inversion_s, 3),
            "inversion_max_s": round(self.meters.inversion_max_s, 3),
            "makespan_s": round(makespan, 3),
            "starts": self.counts["starts"],
            "backfill_starts": self.counts["backfill_starts"],
            "refused_starts": self.counts["refused_starts"],
            "interruptions": self.counts["interruptions"],
            "spot_fallbacks": self.counts["spot_fallbacks"],
            "passes": self.counts["passes"],
            "unfinished": unfinished,
            **self.teams.report(makespan, self.trace.values()),
        }


def simulate(
    trace: Sequence[TraceJob],
    config: SchedulerConfig,
    policy_name: PolicyName = PolicyName.SMQ,
    timing: Timing = DEFAULT_TIMING,
    observe: PassObserver | None = None,
    teams: Teams | None = None,
) -> Result:
    """Replay `trace` under one policy to the end. Only smq applies the governance rules (spot
    fallback): the baselines have none. With quotas the result has per-team figures ("teams"), of
    `teams` when given (a run without quotas measured against the quotas it lacks)."""
    check_pools(trace, config.pools)
    governed = policy_name is PolicyName.SMQ
    run = Simulation(
        trace, config.pools, policy(policy_name, config), governed=governed, timing=timing, observe=observe
    )
    run.teams = SimulatedTeams(config.teams, config.teams if teams is None else teams, config.pools)
    result = run.run()
    result.metrics = {"policy": str(policy_name), "backfill": config.backfill, **result.metrics}
    return result
