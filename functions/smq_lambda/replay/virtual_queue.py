"""The queue in virtual time: jobs arrive, start, train, are interrupted, stopped and complete,
and after each moment that changed something a pass of a scheduling policy decides over a snapshot
of them. A job arrives as the service would have queued it (replay/trace_submission.py), and the
pass's actions are applied through the same lifecycle functions the service uses.

What replays the queue sits on it: `smq simulate` measures a workload's whole run
(simulation/engine.py), and the live start estimates replay the queue as it stands until the jobs
they ask about have started (forecast/). It measures nothing itself.

Time moves from event to event; after the events of one moment a pass runs (`pass_delay_s` later,
when set, modelling the scheduler queue's batching window). Start-up and restart times are drawn
from a seeded generator, so one seed gives one run, bit for bit. It also plays SageMaker: a start
the pool has no room for is refused (a policy that counts badly, like the seed's, gets this), and
the rest of that pass is lost.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from smq_lambda.domain.config.plan_document import TrainingPlan
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import LIVE_STATES, RELEASING_STATES, JobState
from smq_lambda.governance.actions import FallBackToOnDemand
from smq_lambda.replay.events import Event, Timing
from smq_lambda.replay.progress import Progress, training_rate
from smq_lambda.replay.timeline import Segment, Slots
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.replay.trace_submission import queued_job
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.snapshot import Snapshot

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
SEGMENT_OUTCOMES = {AttemptOutcome.PREEMPTED: "preempted", AttemptOutcome.PLAN_WINDOW_CLOSED: "plan_window_closed"}
"""A stop's outcome as the timeline names it (replay/timeline.py)."""

PolicyFunction = Callable[[Snapshot, datetime], list[Action]]
"""A scheduling pass: the actions for a snapshot at a moment."""
PassObserver = Callable[[Snapshot, Sequence[Action], datetime], None]
"""Sees every pass: the snapshot it decided over, its actions, and the virtual time."""


class VirtualQueue:
    """The queue of `trace`'s jobs in `pools`, decided by `policy`; `play` moves it forward."""

    def __init__(
        self,
        trace: Sequence[TraceJob],
        pools: Mapping[str, int],
        policy: PolicyFunction,
        *,
        timing: Timing,
        observe: PassObserver | None = None,
    ) -> None:
        self.observe = observe
        self.trace = {job.name: job for job in trace}
        self.pools = dict(pools)
        self.policy = policy
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
        self.counts: Counter[str] = Counter()
        self.lost: dict[str, float] = {"preemption": 0.0, "interruption": 0.0}
        self.pass_scheduled = False
        self.interrupted = False
        """`play` was stopped by its `stop` before it was done (a deadline): what it did not reach is unknown."""
        self.team_usage: Mapping[str, float] = {}  # what every pass sees of the teams' past use
        self.plans: Mapping[str, TrainingPlan] = {}  # per plan pool (`plan:<name>`), its plan; a run with plans sets it

    def play(
        self, *, until_s: float = math.inf, max_events: int | None = None, stop: Callable[[], bool] | None = None
    ) -> int:
        """Handle events, a pass after each moment's, until none is left, the next lies past `until_s`,
        `max_events` were handled or `stop()` says so (both checked between moments), or `done()`;
        returns the events handled. `interrupted` says whether `stop()` ended it early."""
        handled = 0
        while self.events and self.events[0][0] <= until_s and not self.done():
            if max_events is not None and handled >= max_events:
                break
            if stop is not None and stop():
                self.interrupted = True
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
        return False  # a whole run plays until its events run out; a partial one says when it is done

    def _schedule(self, at: float, kind: Event, name: str, token: int = 0) -> None:
        heapq.heappush(self.events, (at, int(kind), next(self.sequence), name, token))

    def _now(self) -> datetime:
        return EPOCH + timedelta(seconds=self.clock)

    def _advance(self, to: float) -> None:
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
        self.jobs[trace.name] = queued_job(trace, self._now(), self.plans)
        self.progress[trace.name] = Progress(trace, interruptions=list(trace.interruptions_s), pending_since=self.clock)

    def _snapshot(self) -> Snapshot:
        """What a pass decides over now: the pending and live jobs."""
        active = tuple(job for job in self.jobs.values() if job.state is JobState.PENDING or job.is_live)
        return Snapshot(jobs=active, external_usage=dict(self.outside), team_usage=self.team_usage)

    def _pass(self) -> list[Action]:
        snapshot = self._snapshot()
        actions = self.policy(snapshot, self._now())
        self.counts["passes"] += 1
        if self.observe is not None:
            self.observe(snapshot, actions, self._now())
        for action in actions:
            if not self._apply(action):
                break
        return actions

    def _apply(self, action: Action) -> bool:
        """Apply one action; False when SageMaker refused a start (the pass ends there)."""
        job = self.jobs[action.job_name]
        if isinstance(action, ExplainWait):
            self.jobs[job.name] = lifecycle.explain(job, self._now(), action.reason)
        elif isinstance(action, StartJob):
            return self._start(job, action)
        elif isinstance(action, PreemptJob):
            self._preempt(job, action)
        return True

    def _start(self, job: Job, action: StartJob) -> bool:
        held = self._held()
        demand = job.demand if action.placement is None else action.placement.demand
        free = {pool: self.pools.get(pool, 0) - held[pool] for pool in demand}
        if job.state is not JobState.PENDING or not fits(demand, free):
            self.counts["refused_starts"] += 1
            return False
        started = lifecycle.start(
            job,
            self._now(),
            reason=action.reason,
            backfill=action.backfill,
            placement=action.placement,
            keep_alive_s=action.keep_alive_s,
        )
        self.jobs[job.name] = started
        progress = self.progress[job.name]
        progress.rate = training_rate(progress.trace, action.placement)
        progress.on_spot = action.placement.spot if action.placement is not None else progress.trace.is_spot
        if progress.pending_since is not None:  # 0.0 is the trace's first moment, not "never"
            progress.waited += self.clock - progress.pending_since
        progress.pending_since = None
        self.counts["starts"] += 1
        self.counts["backfill_starts"] += action.backfill
        pool, count = next(iter(demand.items()))
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
        self._schedule(self.clock + self._startup_of(action), Event.READY, job.name, action.attempt)
        return True

    def _startup_of(self, action: StartJob) -> float:
        """How long the instances of `action`'s start take to be ready."""
        return self._startup()

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
        to_finish = (progress.trace.duration_s - progress.kept) / progress.rate
        interrupted = progress.on_spot and progress.interruptions
        if interrupted and progress.interruptions[0] - progress.trained < to_finish:
            self._schedule(
                self.clock + progress.interruptions[0] - progress.trained, Event.INTERRUPTED, name, progress.epoch
            )
        else:
            self._schedule(self.clock + to_finish, Event.COMPLETED, name, progress.epoch)

    def _halt(self, name: str, cause: str) -> float:
        """Training stops now and falls back to the last checkpoint; the work lost is returned, in
        seconds of training at the placement that lost it."""
        progress = self.progress[name]
        progress.epoch += 1
        if progress.training_since is None:
            return 0.0
        reached = progress.at(self.clock)
        progress.trained += self.clock - progress.training_since
        progress.training_since = None
        progress.kept = progress.saved(reached)
        lost = (reached - progress.kept) / progress.rate
        self.lost[cause] = self.lost.get(cause, 0.0) + lost
        return lost

    def _preempt(self, job: Job, action: PreemptJob) -> None:
        """A preemption, or a stop before a training plan's window ends (`PreemptJob.outcome`),
        counted and its lost work measured apart."""
        attempt = job.current_attempt
        assert attempt is not None
        self.jobs[job.name] = lifecycle.preempt(job, self._now(), outcome=action.outcome, reason=action.reason)
        for_plan_window = action.outcome is AttemptOutcome.PLAN_WINDOW_CLOSED
        self.counts["plan_window_stops" if for_plan_window else "preemptions"] += 1
        segment = self.open_segments[(job.name, attempt.number)]
        segment.stop_s = self.clock
        segment.lost_work_s += self._halt(job.name, "plan_window" if for_plan_window else "preemption")
        self._schedule(self.clock + self.progress[job.name].trace.stop_s, Event.STOPPED, job.name, attempt.number)

    def _stop_landed(self, job: Job) -> None:
        attempt = job.current_attempt
        assert attempt is not None
        requeued = lifecycle.end_preemption(job, self._now())
        self.jobs[job.name] = requeued
        self.progress[job.name].pending_since = self.clock
        closed = requeued.attempts[-1]
        assert closed.outcome is not None
        self._close_segment(job.name, attempt.number, SEGMENT_OUTCOMES[closed.outcome])

    def _interrupt(self, job: Job) -> None:
        attempt = job.current_attempt
        assert attempt is not None
        progress = self.progress[job.name]
        segment = self.open_segments[(job.name, attempt.number)]
        progress.interruptions.pop(0)
        segment.interruptions.append(self.clock)
        segment.lost_work_s += self._halt(job.name, "interruption")
        self.counts["interruptions"] += 1
        fallback = self._spot_fallback(job, len(segment.interruptions))
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
        """The fall back to on-demand of an interrupted spot job, if it falls back: never here (only
        a run of smq with its governance rules falls back)."""
        return None

    def _release_outside(self, name: str, attempt: int) -> None:
        segment = self.open_segments[(name, attempt)]
        self.outside[segment.pool] -= len(segment.slots)
        if self.outside[segment.pool] <= 0:
            del self.outside[segment.pool]
        self._close_segment(name, attempt, "spot_fallback")

    def _complete(self, job: Job) -> None:
        attempt = job.current_attempt
        assert attempt is not None
        self.progress[job.name].training_since = None
        self.jobs[job.name] = lifecycle.finish(
            job, JobState.COMPLETED, self._now(), outcome=AttemptOutcome.COMPLETED, reason=None
        )
        self._close_segment(job.name, attempt.number, "completed")
        del self.jobs[job.name]

    def _close_segment(self, name: str, attempt: int, outcome: str) -> None:
        segment = self.open_segments.pop((name, attempt))
        segment.end_s = self.clock
        segment.outcome = outcome
        self.slots.give_back(segment.pool, segment.slots)
        self.segments.append(segment)


def fits(demand: Mapping[str, int], available: Mapping[str, int]) -> bool:
    return all(available.get(pool, 0) >= count for pool, count in demand.items())
