"""`smq simulate`'s run of a workload: the queue in virtual time (replay/virtual_queue.py) from a
trace's first arrival to its last completion, measured as it goes (pools, waits, inversions, lost
work, teams, placement) into the metrics a run reports. The smq policy also gets the spot fallback of the
governance rules; the baselines have none. Asked to, it also estimates the pending jobs' starts
before passes and measures them (simulation/estimates.py). Given prices, it prices every attempt
and applies the team budgets to smq's pass (simulation/costs.py).

It also plays what SageMaker does with capacity: the warm pools completed jobs keep
(simulation/warm_pools.py), spot interruptions per instance type, which the pass sees as decayed
rates (simulation/purchase_metrics.py), and training plans, whose windows open and close with a
pass at every window's start and `stop_margin_s` before its end (scheduling/plan_windows.py). A run
with warm pools or plans ends when its last job does, not at a later keep-alive or window.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from smq_lambda.domain.config.teams import Teams
from smq_lambda.domain.costs.budgets import holds_any
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.warm.warm_match import keep_alive_seconds
from smq_lambda.domain.warm.warm_pools import WarmPool
from smq_lambda.governance.actions import FallBackToOnDemand
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.spot import OnDemandCapacity, decide_spot_fallback
from smq_lambda.replay.events import DEFAULT_TIMING, Event, Timing
from smq_lambda.replay.timeline import Segment
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.replay.virtual_queue import EPOCH, PassObserver, PolicyFunction, VirtualQueue
from smq_lambda.scheduling.actions import Action, StartJob
from smq_lambda.scheduling.plan_windows import boundaries
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.simulation.costs import CostMeter, Pricing
from smq_lambda.simulation.estimates import EstimateRecorder
from smq_lambda.simulation.metrics import Meters, Moment, percentiles
from smq_lambda.simulation.placement_metrics import KeptWork, PlacementMeter
from smq_lambda.simulation.policies import PolicyName, SmqPass, policy
from smq_lambda.simulation.purchase_metrics import PurchaseMeter
from smq_lambda.simulation.teams import SimulatedTeams
from smq_lambda.simulation.trace import check_pools
from smq_lambda.simulation.warm_pools import HeldWarmPool, WarmPools


@dataclass
class Result:
    metrics: dict[str, Any]
    segments: list[Segment]
    waits: dict[str, float] = field(default_factory=dict)
    """Per job, the time it spent pending (to the end of the run, for an unfinished one)."""


class Simulation(VirtualQueue):
    """One measured run. `governed`: interrupted spot jobs fall back to on-demand as the governance
    rules say (smq's own policy only)."""

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
        super().__init__(trace, pools, policy, timing=timing, observe=observe)
        self.governed = governed
        self.on_demand = OnDemandCapacity(self.pools)
        """Where a spot job may fall back: the run's pools (a trace names no other: check_pools)."""
        self.meters = Meters.for_pools(self.pools)
        self.kept_work = KeptWork()
        self.placement = PlacementMeter(trace)
        self.waits: dict[int, list[float]] = {}
        self.teams = SimulatedTeams.off()  # simulate() gives it the teams of a configuration with quotas
        self.estimates: EstimateRecorder | None = None  # simulate() gives it one when asked
        self.costs: CostMeter | None = None  # simulate() gives it one when the run is priced
        self.budgets_hold = False  # smq's pass with a hold budget: it sees the teams' spend
        self.smq: SmqPass | None = None  # smq's pass, whose warm pool releases the run applies
        self.warm = WarmPools()
        self.purchase = PurchaseMeter(trace, None)  # simulate() gives it the configuration's spot section
        self.wakes: tuple[float, ...] = ()  # simulate() gives it the plans' window boundaries
        self._reusing: HeldWarmPool | None = None
        """The warm pool the start being applied takes over."""
        self.keeps_warm = any(job.keep_alive_s for job in trace)
        self.ends_with_jobs = self.keeps_warm
        """Warm pools or plans: the run ends with its last job (simulate() sets it for plans)."""

    def run(self) -> Result:
        for job in self.trace.values():
            self._schedule(job.submit_s, Event.SUBMITTED, job.name)
        for moment in self.wakes:
            self._schedule(moment, Event.PASS, "")
        self.play()
        self.meters.finish(self.clock)
        metrics = self._metrics()
        return Result(metrics, sorted(self.segments, key=lambda s: (s.start_s, s.job, s.pool)), self._waits())

    def done(self) -> bool:
        everyone_came = len(self.progress) == len(self.trace)
        return self.ends_with_jobs and everyone_came and not self.jobs and not self.open_segments

    def _waits(self) -> dict[str, float]:
        return {name: progress.waited for name, progress in self.progress.items()}

    def _advance(self, to: float) -> None:
        if to > self.clock:
            self.meters.observe(Moment.of(self.pools, self.outside, self.jobs.values()), self.clock, to)
            self.teams.observe(self.jobs.values(), self.clock, to)
            if self.costs is not None:
                self.costs.observe(self.clock, to)
        super()._advance(to)

    def _snapshot(self) -> Snapshot:
        snapshot = super()._snapshot()
        if self.warm.held or self.purchase.adaptive is not None:
            snapshot = replace(snapshot, warm_pools=self.warm.available(), spot_rates=self.purchase.rates(self._now()))
        if self.costs is None or not self.budgets_hold:
            return snapshot
        return self.costs.with_spend(snapshot, self._now())

    def _pass(self) -> list[Action]:
        self.team_usage = self.teams.usage(self.team_usage, self.jobs.values(), self.clock)
        if self.estimates is not None:
            self.estimates.before_pass(self._snapshot(), self._now())
        actions = super()._pass()
        self._release_warm_pools()
        self.teams.decided(actions, self.jobs, self.clock)
        if self.costs is not None:
            reset = self.costs.reset_pass_at(self._now(), idle=not self.events)
            if reset is not None:
                self._schedule(_seconds(reset), Event.PASS, "")
        return actions

    def _release_warm_pools(self) -> None:
        """The warm pools smq's last pass ended: SageMaker takes their instances back at once."""
        decision = self.smq.last if self.smq is not None else None
        for release in decision.warm_releases if decision is not None else ():
            if self.warm.release(release.training_job_name):
                self._schedule(self.clock, Event.WARM_ENDED, release.training_job_name)

    def _handle(self, kind: Event, name: str, token: int) -> None:
        if kind is Event.WARM_ENDED:
            self.warm.ended(name, self.clock)
            return
        super()._handle(kind, name, token)

    def _held(self) -> Counter[str]:
        return super()._held() + self.warm.demand()

    def _spot_fallback(self, job: Job, interruptions: int) -> FallBackToOnDemand | None:
        attempt = job.current_attempt
        if not self.governed or attempt is None:
            return None
        description = {
            "TrainingJobName": attempt.training_job_name,
            "TrainingJobStatus": "InProgress",
            "SecondaryStatusTransitions": [{"Status": "Interrupted"}] * interruptions,
        }
        decision = decide_spot_fallback(job, description, Policy(), self.on_demand)
        return decision if isinstance(decision, FallBackToOnDemand) else None

    def _start(self, job: Job, action: StartJob) -> bool:
        self._reusing = self.warm.held.pop(action.warm_pool, None) if action.warm_pool is not None else None
        started = super()._start(job, action)
        reused, self._reusing = self._reusing, None
        if reused is not None and started:
            self.warm.reused_by((job.name, action.attempt), reused, self.clock)
        elif reused is not None:
            self.warm.held[reused.warm.training_job_name] = reused
        if started:
            self.placement.started(job.name, job.placements, action.placement)
            self.purchase.started((job.name, action.attempt), self.progress[job.name].on_spot)
        if started and self.estimates is not None:
            self.estimates.started(job.name, self._now())
        if started and self.costs is not None:
            self.costs.started(self.jobs[job.name])
        return started

    def _startup_of(self, action: StartJob) -> float:
        startup = super()._startup_of(action)
        if self._reusing is None:
            return startup
        self.warm.startup_saved_s += startup
        return 0.0  # SageMaker provisions nothing: the instances are up

    def _interrupt(self, job: Job) -> None:
        attempt = job.current_attempt
        assert attempt is not None
        instance_type = attempt.placement.instance_type if attempt.placement is not None else next(iter(job.demand))
        self.purchase.interrupted_at(attempt.training_job_name, instance_type, self._now())
        super()._interrupt(job)

    def _halt(self, name: str, cause: str) -> float:
        progress = self.progress[name]
        since, kept = progress.training_since, progress.kept
        lost = super()._halt(name, cause)
        if since is not None:
            self.kept_work.checkpointed(name, self.jobs[name].demand, progress.rate, kept, progress.kept)
        if self.costs is not None and since is not None:
            self.costs.trained(name, self.clock - since, lost)
        return lost

    def _close_segment(self, name: str, attempt: int, outcome: str) -> None:
        segment = self.open_segments[(name, attempt)]
        super()._close_segment(name, attempt, outcome)
        self.warm.attempt_ended((name, attempt), segment.start_s, self.clock)
        self.purchase.ended((name, attempt), len(segment.slots), self.clock - segment.start_s)
        if self.costs is not None:
            self.costs.ended(segment, self._now())

    def _complete(self, job: Job) -> None:
        if self.estimates is not None:
            self.estimates.completing(job, self._now())
        progress = self.progress[job.name]
        if self.costs is not None and progress.training_since is not None:
            self.costs.trained(job.name, self.clock - progress.training_since, 0.0)
        for demand, seconds in self.kept_work.completed(job.name, job.demand, progress.rate, progress.trace.duration_s):
            self.meters.keep_training(demand, seconds)
        self.waits.setdefault(job.priority, []).append(progress.waited)
        self._keep_warm(job)
        super()._complete(job)

    def _keep_warm(self, job: Job) -> None:
        """A completing job leaves a warm pool for the keep-alive its attempt sent, if any."""
        attempt = job.current_attempt
        assert attempt is not None
        keep_alive = keep_alive_seconds(job.request) if attempt.keep_alive_s is None else attempt.keep_alive_s
        if job.warm_key is None or keep_alive <= 0:
            return
        (pool, count), until = next(iter(job.demand.items())), self._now() + timedelta(seconds=keep_alive)
        instance_type = attempt.placement.instance_type if attempt.placement is not None else pool
        warm = WarmPool(attempt.training_job_name, pool, instance_type, count, job.warm_key, available_until=until)
        self.warm.left(warm, self.clock, self.clock + keep_alive)
        self._schedule(self.clock + keep_alive, Event.WARM_ENDED, attempt.training_job_name)

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
            **({"plan_window_stops": self.counts["plan_window_stops"]} if self.plans else {}),
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
            **({"estimates": self.estimates.report()} if self.estimates is not None else {}),
            **({"cost": self.costs.report()} if self.costs is not None else {}),
            **({"placement": self.placement.report(self._waits())} if self.placement.flexible else {}),
            **({"warm_pools": self.warm.report()} if self.keeps_warm else {}),
            **({"purchase": self.purchase.report(self.counts["spot_fallbacks"])} if self.purchase.reported else {}),
            **({"invariant_violations": self._violations()} if self.smq is not None else {}),
        }

    def _violations(self) -> list[str]:
        """What smq's passes broke of the invariants, each with its moment on the run's clock."""
        assert self.smq is not None
        return [f"{_seconds(at):.0f}s {violation}" for at, violation in self.smq.violations]


def _seconds(moment: datetime) -> float:
    """`moment` on the run's clock."""
    return (moment - EPOCH).total_seconds()


def simulate(
    trace: Sequence[TraceJob],
    config: SchedulerConfig,
    policy_name: PolicyName = PolicyName.SMQ,
    timing: Timing = DEFAULT_TIMING,
    observe: PassObserver | None = None,
    teams: Teams | None = None,
    *,
    estimates: bool = False,
    pricing: Pricing | None = None,
) -> Result:
    """Replay `trace` under one policy to the end. Only smq applies the governance rules (spot
    fallback): the baselines have none. With quotas the result has per-team figures ("teams"), of
    `teams` when given (a run without quotas measured against the quotas it lacks). `estimates`:
    measure smq's start estimates too ("estimates" in the metrics; simulation/estimates.py): they
    replay smq's pass, so the baselines get none. `pricing`: price every attempt ("cost" in the
    metrics) and hold smq's jobs by the configuration's budgets (simulation/costs.py)."""
    check_pools(trace, config.pools)
    governed = policy_name is PolicyName.SMQ
    costs = CostMeter(pricing, config) if pricing is not None else None
    smq = SmqPass(config) if governed else None
    decides = policy(policy_name, config) if smq is None else costs.smq_pass(smq) if costs is not None else smq
    run = Simulation(trace, config.pools, decides, governed=governed, timing=timing, observe=observe)
    run.smq = smq
    run.purchase = PurchaseMeter(trace, config.spot)
    run.plans = {plan.pool: plan for plan in config.training_plans.values()}
    run.wakes = tuple(_seconds(moment) for moment in boundaries(config, EPOCH))
    run.ends_with_jobs = run.ends_with_jobs or bool(config.training_plans)
    run.costs = costs
    run.budgets_hold = costs is not None and governed and holds_any(config.budgets)
    run.teams = SimulatedTeams(config.teams, config.teams if teams is None else teams, config.pools)
    run.on_demand = OnDemandCapacity(run.pools, teams=config.teams)
    if estimates and governed:
        run.estimates = EstimateRecorder(config)
    result = run.run()
    result.metrics = {"policy": str(policy_name), "backfill": config.backfill, **result.metrics}
    return result
