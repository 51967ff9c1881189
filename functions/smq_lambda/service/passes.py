"""Scheduling passes: under the lease, read what a decision can depend on, decide (the pure
`decide_pass`), and apply the actions one job at a time."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import assert_never

from aws_lambda_powertools import Logger

from smq_lambda.domain.costs.budgets import holds_any, month_days
from smq_lambda.domain.costs.costs import Prices
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.warm.warm_pools import WarmPoolTotals
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.forecast.accuracy import StartAccuracy
from smq_lambda.governance import notices
from smq_lambda.governance.notices import NoticeAction
from smq_lambda.pass_summary import PassSummary
from smq_lambda.ports import (
    ConfigSource,
    CostRecords,
    DurationStore,
    InUse,
    JobStore,
    PassLease,
    PassSummaries,
    PriceSource,
    SpotInterruptionBook,
    TeamUsageHistory,
    WarmPoolStore,
)
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, ReleaseWarmPool, StartJob
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.decide import Decision, decide_pass
from smq_lambda.scheduling.invariants import Violation, check_pass
from smq_lambda.scheduling.plan_windows import in_force
from smq_lambda.scheduling.purchase_options import listed_fronts
from smq_lambda.scheduling.queue_front import front_sizes, team_front_sizes
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot, held_warm_pools
from smq_lambda.service.job_effects import Created, JobEffects, isolated
from smq_lambda.service.pass_measures import count_stuck, pass_summary
from smq_lambda.service.spot_interruptions import rates_for_pass
from smq_lambda.service.start_estimates import StartEstimates, carried, keep_first, with_first
from smq_lambda.service.team_usage import TeamUsageKeeper

logger = Logger(service="smq", child=True)

MAX_PASSES = 5
"""Bound on back-to-back passes in one call (reruns requested meanwhile, refused starts)."""
FORGET_TEAM_TAG_AFTER = timedelta(hours=1)


@dataclass
class PassReport:
    """What the passes of one `schedule()` call did, for metrics and logs."""

    passes: int = 0
    started: list[Job] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)
    """Jobs whose create may or may not have taken effect (left `starting` for reconciliation)."""
    preempted: list[str] = field(default_factory=list)
    plan_window_stops: list[str] = field(default_factory=list)
    """Jobs stopped before their training plan's window ended: not preemptions."""
    refused: list[str] = field(default_factory=list)
    skipped_busy: bool = False
    job_errors: list[str] = field(default_factory=list)
    stuck: int = 0
    summary: PassSummary | None = None
    """What the last pass published (None: no pass ran)."""
    start_accuracy: list[StartAccuracy] = field(default_factory=list)
    """Each job started, measured against the first estimate it was given (see start_estimates.py)."""
    invariant_violations: list[Violation] = field(default_factory=list)
    """What the invariant checker found wrong with the passes' decisions (scheduling/invariants.py):
    each is logged, and their count is the InvariantViolations metric, which an alarm watches."""
    warm_totals: WarmPoolTotals | None = None
    """What the warm pools that ended so far retained and how many were reused (read by the last
    pass of the call, when the stack keeps warm pools)."""


@dataclass(frozen=True)
class LastPass:
    """What the start estimates of a call's last pass replay: the jobs as it left them."""

    snapshot: Snapshot
    now: datetime
    config: SchedulerConfig


class Passes:
    def __init__(
        self,
        *,
        store: JobStore,
        config: ConfigSource,
        lease: PassLease,
        clock: Callable[[], datetime],
        effects: JobEffects,
        pass_summaries: PassSummaries | None,
        stuck_after: timedelta,
        team_usage: TeamUsageHistory | None = None,
        durations: DurationStore | None = None,
        cost_records: CostRecords | None = None,
        prices: PriceSource | None = None,
        spot_interruptions: SpotInterruptionBook | None = None,
        warm_pools: WarmPoolStore | None = None,
    ) -> None:
        self._store = store
        self._config = config
        self._lease = lease
        self._clock = clock
        self._effects = effects
        self._pass_summaries = pass_summaries
        self._stuck_after = stuck_after
        self._team_usage = TeamUsageKeeper(team_usage)
        self._start_estimates = StartEstimates(durations, pass_summaries)
        self._cost_records = cost_records
        self._prices = prices
        self._spot_interruptions = spot_interruptions
        self._warm_pools = warm_pools

    def schedule(
        self, *, lease_for: timedelta | None = None, time_left: Callable[[], float] | None = None
    ) -> PassReport:
        """Run passes until no one asked for another, holding the lease (for `lease_for`, or the
        lease's default); a caller that finds the lease taken leaves a rerun request for the holder
        and returns at once. The lease is held only to decide and write: the last pass's start
        estimates and the warm-pool totals are made after it is released, in the seconds
        `time_left` gives (a deadline; None: no limit), which they never run over (see
        `_after_lease`)."""
        report = PassReport()
        owner = uuid.uuid4().hex
        if not self._lease.try_acquire(owner, self._clock(), lease_for):
            self._lease.request_rerun()
            if not self._lease.try_acquire(owner, self._clock(), lease_for):
                report.skipped_busy = True
                report.stuck = count_stuck(self._store.in_use().live, self._clock(), self._stuck_after)
                return report
        try:
            while True:
                another, last = self._run_pass(report)
                if another:
                    continue
                if self._lease.release(owner):
                    break
        except BaseException:
            self._lease.abandon(owner)
            raise
        self._after_lease(report, last, time_left)
        return report

    def _after_lease(self, report: PassReport, last: LastPass, time_left: Callable[[], float] | None) -> None:
        """The read-only work of the call's last pass, once the lease is released: its start
        estimates, published into its summary unless a later pass published one meanwhile (the
        jobs the deadline left unestimated keep the last estimates they had, with their age), and
        the warm-pool totals. A failure here costs estimates, never a decision."""
        report.warm_totals = self._warm_pools.totals() if self._warm_pools is not None else None
        estimates = self._start_estimates.estimate(last.snapshot, last.now, last.config, time_left)
        if not estimates or report.summary is None:
            return
        summary = with_first(replace(report.summary, estimates={**report.summary.estimates, **estimates}))
        report.summary = summary
        self._publish(summary)

    def _run_pass(self, report: PassReport) -> tuple[bool, LastPass]:
        """One decide-and-apply pass; True when a refused start freed capacity worth another pass
        (at most MAX_PASSES in one call), and what the call's estimates need of it. Only the last
        pass of a call estimates start times (after the lease: `_after_lease`): the estimates of a
        pass followed at once by another would be replaced before anyone read them. Until then its
        summary carries the last estimates of the jobs still waiting, with their age.

        It reads what its decisions can depend on: every live job and the outside usage, exactly
        (`JobStore.in_use`), and per pool (with team quotas, also per team and pool) the first
        pending jobs as far as they can matter (see scheduling/queue_front.py), never the whole queue;
        with team quotas, also the teams' past usage (see service/team_usage.py); with a hold
        budget, the teams' spend this month and the prices (see scheduling/budget_hold.py); with an
        adaptive `spot` section, the spot interruption rates (service/spot_interruptions.py); the warm
        pools the queue's attempts left, still held (domain/warm/warm_pools.py); the last
        report's first estimates (one item), and for its estimates the duration summaries of the
        jobs it estimates (see service/start_estimates.py).
        """
        report.passes += 1
        now = self._clock()
        config = in_force(self._config.load(), now)  # the same in force as in decide_pass: it sizes the fronts
        held = self._store.in_use()
        warm = tuple(self._warm_pools.available(now)) if self._warm_pools is not None else ()
        ledger = Ledger.measure(Snapshot(jobs=tuple(held.live), external_usage=held.outside, warm_pools=warm), config)
        # One measurement per pass: it sizes the fronts, then the pass decides on it (pending jobs
        # hold nothing, so it is the ledger of the whole snapshot).
        pools = sorted(set(config.pools) | held.pools)
        pending = self._pending(pools, ledger, config, held, now)
        jobs = [*held.live, *pending]
        counted = self._team_usage.count(config.teams, held.live, now)
        team_usage = counted.usage if counted is not None else {}
        team_spend, prices = self._budget_inputs(config, now)
        snapshot = Snapshot(
            jobs=tuple(jobs),
            external_usage=held.outside,
            team_usage=team_usage,
            team_spend=team_spend,
            prices=prices,
            spot_rates=rates_for_pass(self._spot_interruptions, config, now),
            warm_pools=warm,
        )
        decision = decide_pass(snapshot, now, config, measured=ledger)
        self._check(snapshot, config, decision, now, report)
        by_name = {job.name: job for job in jobs}
        after = dict(by_name)  # each job as this pass leaves it
        refused_before, started_before = len(report.refused), len(report.started)
        for action in decision.actions:
            with isolated(action.job_name, type(action).__name__, report.job_errors):
                after[action.job_name] = self._apply(action, by_name[action.job_name], now, report)
        for release in decision.warm_releases:
            with isolated(release.training_job_name, "ReleaseWarmPool", report.job_errors):
                self._release(release)
        for job in held.live:
            if job.state is JobState.STOPPING and job.current_attempt is not None:
                with isolated(job.name, "stop", report.job_errors):
                    self._effects.stop(job.current_attempt.training_job_name)
        self._team_usage.keep(counted)
        final = [job for job in after.values() if job.is_live]
        report.stuck = count_stuck(final, now, self._stuck_after)
        waiting = [job for job in after.values() if job.state is JobState.PENDING]
        warm_left = held_warm_pools(replace(snapshot, jobs=tuple(final)))
        summary = pass_summary(final, held.outside, config, now, decision.heads, pending=waiting, warm_pools=warm_left)
        summary = replace(
            summary, budget_held=decision.budget_held, explained=decision.explained, spot_rates=snapshot.spot_rates
        )
        another = len(report.refused) > refused_before and report.passes < MAX_PASSES
        previous = self._start_estimates.latest()
        summary = replace(summary, estimates=carried(previous, {job.name for job in waiting}))
        summary, accuracy = keep_first(summary, report.started[started_before:], previous)
        report.start_accuracy.extend(accuracy)
        report.summary = summary
        self._publish(summary)
        left = replace(snapshot, jobs=tuple(after.values()))  # the estimates replay what the pass saw
        return another, LastPass(left, now, config)

    def _check(
        self, snapshot: Snapshot, config: SchedulerConfig, decision: Decision, now: datetime, report: PassReport
    ) -> None:
        """Check the decision against the invariants on what the pass read; a violation is logged
        (naming the invariant) and counted, and the pass goes on: its actions stay within the
        rules the scheduler applies, and the alarm calls for a person."""
        violations = check_pass(snapshot, config, decision.actions, now, budget_held=decision.budget_held)
        for violation in violations:
            logger.error(
                "invariant violated",
                extra={"invariant": str(violation.invariant), "subject": violation.subject, "detail": violation.detail},
            )
        report.invariant_violations.extend(violations)

    def _budget_inputs(self, config: SchedulerConfig, now: datetime) -> tuple[dict[str, float] | None, Prices]:
        """Each team's spend this month (the cost records' day totals) and the prices in force, read
        only while some budget holds and the stack keeps cost records and prices; else (None, {}),
        and no budget holds a job."""
        if self._cost_records is None or self._prices is None or not holds_any(config.budgets):
            return None, {}
        totals = self._cost_records.totals("team", month_days(now))
        return {team: figures.spend_usd for team, figures in totals.items()}, self._prices.load()

    def _pending(
        self, pools: list[str], ledger: Ledger, config: SchedulerConfig, held: InUse, now: datetime
    ) -> list[Job]:
        """The pending jobs of every front (each pool's, and with quotas each team's in each pool,
        removed teams' included), each once, the live ones left out (the index may lag a start)."""
        sizes = front_sizes(pools, ledger, backfill=config.backfill)
        fronts = [self._store.pending_front(pool, size) for pool, size in listed_fronts(sizes).items()]
        team_fronts = listed_fronts(
            team_front_sizes(pools, ledger, config.teams, backfill=config.backfill, team_tags=held.team_tags)
        )
        seen_teams: set[str] = set()
        for (pool, team), size in team_fronts.items():
            front = self._store.pending_front(pool, size, team=team)
            if front:
                seen_teams.add(team)
            fronts.append(front)
        self._forget_drained_teams(pools, config, held, seen_teams, set(team_fronts), now)
        live = {job.name for job in held.live}
        pending: dict[str, Job] = {}
        for front in fronts:
            for job in front:
                if job.name not in live and job.state is JobState.PENDING:
                    pending.setdefault(job.name, job)
        return list(pending.values())

    def _forget_drained_teams(
        self,
        pools: list[str],
        config: SchedulerConfig,
        held: InUse,
        seen: set[str],
        read: set[tuple[str, str]],
        now: datetime,
    ) -> None:
        """Forget the registered team tag values the configuration does not name once no job of
        theirs is pending in any pool, so removed teams cost no reads for ever. Submission refuses
        such values while quotas are configured, and only values last submitted FORGET_TEAM_TAG_AFTER
        ago or more are forgotten, far longer than the pending index lags a submission or the API
        caches the configuration (a submission meanwhile keeps the value: the store's condition). `seen`: the values whose fronts this pass found jobs in; `read`:
        the (pool, value) fronts it read."""
        if not config.teams.enabled:
            return
        for team, registered_at in sorted(held.team_tags.items()):
            if not config.teams.unconfigured(team) or team in seen or now - registered_at < FORGET_TEAM_TAG_AFTER:
                continue
            if any(self._store.pending_front(pool, 1, team=team) for pool in pools if (pool, team) not in read):
                continue
            try:
                self._store.forget_team_tag(team, registered_at)
            except ServiceUnavailable as exc:
                logger.warning("could not forget a removed team; a later pass does", extra={"error": str(exc)})

    def _apply(self, action: Action, decided: Job, now: datetime, report: PassReport) -> Job:
        """Carry out one action; returns the job as it now stands (unchanged when a race was lost).

        A pending job was decided over as the pending index showed it (no request, and perhaps a
        moment old): it is read by key first, and left for the next pass if it changed meanwhile.
        """
        job = self._whole(decided)
        if job is None:
            return decided
        if isinstance(action, StartJob):
            starting = lifecycle.start(
                job,
                now,
                reason=action.reason,
                backfill=action.backfill,
                placement=action.placement,
                keep_alive_s=action.keep_alive_s,
            )
            started = self._effects.save(starting, job)
            if started is None:
                return job
            created, current = self._effects.create(started)
            if created is Created.YES:
                report.started.append(started)
            elif created is Created.REFUSED:
                report.refused.append(started.name)
            else:
                report.unconfirmed.append(started.name)
            return current
        if isinstance(action, PreemptJob):
            preempting = lifecycle.preempt(
                job, now, outcome=action.outcome, reason=action.reason, history=action.history
            )
            stopping = self._effects.save(preempting, job)
            if stopping is None:
                return job
            for_plan_window = action.outcome is AttemptOutcome.PLAN_WINDOW_CLOSED
            if stopping.current_attempt is not None:
                self._effects.stop(stopping.current_attempt.training_job_name)
                (report.plan_window_stops if for_plan_window else report.preempted).append(stopping.name)
            notice = NoticeAction.PLAN_WINDOW_CLOSED if for_plan_window else NoticeAction.PREEMPTED
            self._effects.notify(notices.about_job(stopping, notice, action.reason))
            return stopping
        if isinstance(action, ExplainWait):
            return self._effects.save(lifecycle.explain(job, now, action.reason), job) or job
        assert_never(action)

    def _release(self, release: ReleaseWarmPool) -> None:
        """End a warm pool in SageMaker, then mark it released, so later passes count its instances
        as on their way back (until its end report removes it)."""
        assert self._warm_pools is not None, "a pass without warm pools releases none"
        if self._effects.end_warm_pool(release.training_job_name):
            self._warm_pools.release(release.training_job_name)
            logger.info("warm pool ended", extra={"training_job": release.training_job_name, "reason": release.reason})

    def _whole(self, decided: Job) -> Job | None:
        """The job as stored, if it is still the one decided over (same submission and version)."""
        if decided.is_live:
            return decided
        stored = self._store.get(decided.name)
        if stored is None or stored.job_id != decided.job_id or stored.version != decided.version:
            logger.info("job changed since the pending index showed it; skipped", extra={"job": decided.name})
            return None
        return stored

    def _publish(self, summary: PassSummary) -> None:
        """Publish the pass's summary; a throttled table only delays it to the next pass."""
        if self._pass_summaries is None:
            return
        try:
            self._pass_summaries.publish(summary)
        except ServiceUnavailable as exc:
            logger.warning("could not publish the pass summary; the next pass does", extra={"error": str(exc)})
