"""The scheduler's use cases: take a SageMaker report, reconcile with SageMaker, run a pass.

Each use case loads what it needs through the ports, asks the pure domain what to do, and writes
the result conditionally. A lost race (VersionConflict) is never an error: the other writer's change
stands, and the next report or pass sees it.

One job never stops the others: an unexpected error while applying a report, an action or a repair
to one job is logged with the job's name, counted (the `JobErrors` metric) and the use case goes
on with the next job. Whatever state the failed step left the job in is one reconciliation repairs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, assert_never

from aws_lambda_powertools import Logger

from smq_lambda.domain import lifecycle
from smq_lambda.domain.held_instances import held_instances
from smq_lambda.domain.lifecycle import DEFAULT_RETRY_LIMITS, StartRetryLimits
from smq_lambda.domain.model import Attempt, Job
from smq_lambda.domain.states import RELEASING_STATES, JobState
from smq_lambda.domain.training_status import (
    IN_PROGRESS,
    STOPPING,
    apply_report,
    is_own_attempt,
    is_stale,
    vanished,
)
from smq_lambda.errors import (
    ServiceUnavailable,
    StartOutcomeUnknown,
    StartRefused,
    TrainingServiceError,
    VersionConflict,
)
from smq_lambda.governance.policy import Policy
from smq_lambda.ports import (
    ConfigSource,
    InUse,
    JobStore,
    PassLease,
    PolicySource,
    PoolUsageBoard,
    PoolUsageReport,
    TrainingJobStatus,
    TrainingService,
)
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.decide import decide_pass
from smq_lambda.scheduling.snapshot import Snapshot
from smq_lambda.scheduling.window import window_sizes
from smq_lambda.service.idle_watch import IdleWatch
from smq_lambda.service.pass_measures import STUCK_AFTER, count_stuck, pool_usage

logger = Logger(service="smq", child=True)

REPORT_RETRIES = 5
HOLDING_STATUSES = frozenset({IN_PROGRESS, STOPPING})
"""Statuses in which a training job holds its instances."""
MAX_PASSES = 5
"""Bound on back-to-back passes in one call (reruns requested meanwhile, refused starts)."""


class Created(Enum):
    """What became of a CreateTrainingJob for an attempt."""

    YES = "created"
    REFUSED = "refused"
    UNKNOWN = "unknown"
    """The call may have taken effect: the attempt stays open and reconciliation asks SageMaker."""


@dataclass
class PassReport:
    """What the passes of one `schedule()` call did, for metrics and logs."""

    passes: int = 0
    started: list[Job] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)
    """Jobs whose create may or may not have taken effect (left `starting` for reconciliation)."""
    preempted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    skipped_busy: bool = False
    job_errors: list[str] = field(default_factory=list)
    stuck: int = 0
    usage: PoolUsageReport | None = None


@dataclass
class ReportOutcome:
    """What one SageMaker report did: the job's new value when it changed."""

    changed: Job | None = None
    job_errors: list[str] = field(default_factory=list)
    outside: bool = False
    """The report was about a training job outside the queue (its tags named a queue job, but it
    is not that job's attempt): its caller records the instances it holds with `report_outside`."""


@dataclass
class Reconciliation:
    """What one reconciliation did: how many jobs it repaired, and which ones failed unexpectedly."""

    repaired: int = 0
    job_errors: list[str] = field(default_factory=list)
    pending_by_pool: dict[str, int] = field(default_factory=dict)
    """Pending jobs per pool, counted once per reconciliation (QueueDepth): a pass reads only the
    front of each pool, so it does not know the depth."""


class Scheduler:
    def __init__(
        self,
        *,
        store: JobStore,
        training: TrainingService,
        config: ConfigSource,
        lease: PassLease,
        clock: Callable[[], datetime],
        usage_board: PoolUsageBoard | None = None,
        retry_limits: StartRetryLimits = DEFAULT_RETRY_LIMITS,
        stuck_after: timedelta = STUCK_AFTER,
        policy: PolicySource | None = None,
        idle_watch: IdleWatch | None = None,
    ) -> None:
        """`policy` None: the default governance policy (`Policy()`). `idle_watch` None: no idle
        alarms (no idle topic configured)."""
        self._store = store
        self._training = training
        self._config = config
        self._lease = lease
        self._clock = clock
        self._usage_board = usage_board
        self._retry_limits = retry_limits
        self._stuck_after = stuck_after
        self._policy = policy
        self._idle_watch = idle_watch

    # ------------------------------------------------------------------ reports

    def report(self, job_name: str, attempt_number: int, status: TrainingJobStatus) -> ReportOutcome:
        """Apply one SageMaker status report (event or describe) to its job. Duplicates and reports of
        old attempts change nothing; a report that a closed attempt is still running stops that
        orphan; a report whose training job is not the attempt's own is about a job outside the queue.
        The governance policy has its say first (spot fallback, MaxWaitTimeExceeded, failure retry);
        a spot attempt that falls back is stopped after the write, and should that stop fail, the
        attempt's next report (an interrupted spot job keeps reporting) stops it as an orphan."""
        outcome = ReportOutcome()
        with _isolated(job_name, "report", outcome.job_errors):
            outcome.changed = self._report(job_name, attempt_number, status, outcome=outcome)
        return outcome

    def _report(
        self,
        job_name: str,
        attempt_number: int,
        status: TrainingJobStatus,
        alarm_names: Collection[str] | None = None,
        *,
        outcome: ReportOutcome | None = None,
    ) -> Job | None:
        """`alarm_names`: the idle alarms reconciliation listed, so a training job's alarms are
        put only when missing; None (an event) puts them whenever it reports `Training`. A report
        about a training job outside the queue marks `outcome` so."""
        policy = self._policy.load() if self._policy is not None else Policy()
        for _ in range(REPORT_RETRIES):
            job = self._store.get(job_name)
            if job is None or not is_own_attempt(job, attempt_number, status.name):
                logger.info(
                    "training job outside the queue",
                    extra={"training_job": status.name, "tagged_job": job_name, "tagged_attempt": attempt_number},
                )
                if outcome is not None:
                    outcome.outside = True
                return None
            effect = apply_report(job, attempt_number, status, self._clock(), policy)
            if effect is None:
                if not is_stale(job, attempt_number, status):
                    self._track_closed_attempt(job, job, attempt_number, status)
                self._stop_if_orphan(job, attempt_number, status)
                if self._idle_watch is not None:
                    self._idle_watch.on_report(job, job, attempt_number, status, policy, alarm_names)
                return None
            try:
                saved = self._store.save(effect.job, expected_version=job.version)
            except VersionConflict:
                continue
            logger.info(
                "job changed",
                extra={"job": job_name, "state": saved.state, "sagemaker": status.status, "reason": saved.reason},
            )
            self._track_closed_attempt(job, saved, attempt_number, status)
            if effect.stop is not None:
                self._stop(effect.stop)
            if self._idle_watch is not None:
                self._idle_watch.on_report(job, saved, attempt_number, status, policy, alarm_names)
            return saved
        logger.warning("report kept losing races; reconciliation will repair", extra={"job": job_name})
        return None

    def _track_closed_attempt(self, before: Job, after: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        """A training job of an attempt the job has closed (a spot attempt that fell back and is
        still stopping, an orphan being stopped) holds its instances until SageMaker reports its
        end, though its job no longer counts them: it is counted as outside the queue until then.
        An attempt that closes with its own end report (the usual completion) was never counted."""
        if _is_open(after, attempt_number) and after.is_live:
            return
        holding = status.status in HOLDING_STATUSES
        if not holding and _is_open(before, attempt_number):
            return
        self._store.record_outside(status.name, after.demand, holding=holding)

    def report_outside(self, detail: Mapping[str, Any]) -> ReportOutcome:
        """A state change of a training job outside the queue (the event's detail, with Tags as a
        map): the instances it holds while in progress are recorded for the passes (removed when it
        ends; a lost or reordered event is corrected by reconciliation), and it gets idle alarms
        while it trains when `idle.enforce_outside_queue` is on."""
        outcome = ReportOutcome()
        name = str(detail.get("TrainingJobName"))
        with _isolated(name, "report_outside", outcome.job_errors):
            held = held_instances(detail).counts
            if held:
                holding = detail.get("TrainingJobStatus") in HOLDING_STATUSES
                self._store.record_outside(name, held, holding=holding)
            if self._idle_watch is not None:
                policy = self._policy.load() if self._policy is not None else Policy()
                self._idle_watch.on_outside_report(detail, policy)
        return outcome

    def _stop_if_orphan(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        """Stop one of the job's own attempts that runs although the job has moved past it. Only
        called for reports `is_own_attempt` accepted, so it never stops a job the queue did not start."""
        if status.status != IN_PROGRESS:
            return
        attempt = job.current_attempt
        is_current_and_open = attempt is not None and attempt.number == attempt_number and attempt.is_open
        if not is_current_and_open:
            logger.warning("stopping an attempt the queue no longer wants", extra={"job": job.name})
            self._stop(status.name)

    # ------------------------------------------------------------------ reconciliation

    def reconcile(self) -> Reconciliation:
        """Repair what lost events left behind: ask SageMaker about every live attempt, and sweep
        the idle alarms no open attempt owns (listed before the jobs are read: see `idle.orphaned`)."""
        result = Reconciliation()
        alarm_names = self._idle_watch.alarm_names() if self._idle_watch is not None else None
        held = self._store.in_use()
        jobs = held.live
        self._correct_outside(held, result)
        for job in jobs:
            attempt = job.current_attempt
            if job.is_live and attempt is not None:
                with _isolated(job.name, "reconcile", result.job_errors):
                    result.repaired += self._reconcile(job, attempt, alarm_names)
        if self._idle_watch is not None and alarm_names is not None:
            open_attempts = [
                job.current_attempt.training_job_name
                for job in jobs
                if job.is_live and job.current_attempt is not None and job.current_attempt.is_open
            ]
            policy = self._policy.load() if self._policy is not None else Policy()
            with _isolated("(idle alarms)", "sweep", result.job_errors):
                self._idle_watch.sweep(alarm_names, open_attempts, policy, self._training)
        return result

    def _correct_outside(self, held: InUse, result: Reconciliation) -> None:
        """Replace the outside usage the events recorded with what SageMaker lists now (a lost or
        reordered event of a training job outside the queue is corrected here, and only here:
        passes never list SageMaker), and count the pending jobs of each pool for QueueDepth."""
        attempts = [job.current_attempt.training_job_name for job in held.live if job.current_attempt is not None]
        try:
            outside = self._training.outside_in_progress(attempts)
        except TrainingServiceError as exc:
            logger.warning("could not list training jobs; next reconciliation retries", extra={"error": str(exc)})
        else:
            self._store.replace_outside(outside)
        pools = sorted(set(self._config.load().pools) | held.pools)
        result.pending_by_pool = {pool: self._store.count_pending(pool) for pool in pools}

    def _reconcile(self, job: Job, attempt: Attempt, alarm_names: Collection[str] | None) -> int:
        """Repair one live job; returns 1 when it changed."""
        try:
            status = self._training.describe(attempt.training_job_name)
        except TrainingServiceError as exc:
            logger.warning(
                "could not describe; next reconciliation retries", extra={"job": job.name, "error": str(exc)}
            )
            return 0
        if status is None:
            return self._repair_missing(job)
        if self._report(job.name, attempt.number, status, alarm_names) is not None:
            return 1
        if job.state in RELEASING_STATES and status.status == IN_PROGRESS:
            self._stop(attempt.training_job_name)
        return 0

    def _repair_missing(self, job: Job) -> int:
        if job.state is JobState.STARTING:
            return self._recreate(job)
        try:
            self._store.save(vanished(job, self._clock()), expected_version=job.version)
        except VersionConflict:
            return 0
        if self._idle_watch is not None:
            self._idle_watch.attempt_ended(job)
        return 1

    def _recreate(self, job: Job) -> int:
        """SageMaker has no training job for a `starting` attempt (the pass died between its write
        and the create, or the create's answer was lost): create it again, which is idempotent.

        If even that raises unexpectedly, the attempt is closed as a transient refusal before the
        error goes on to be logged and counted: the job gives its instances back and its retries
        are bounded by the start retry limits, instead of holding its pool for ever.
        """
        try:
            created, _ = self._create(job)
        except Exception as exc:
            reason = f"could not create the training job: {type(exc).__name__}"
            self._save(
                lifecycle.refuse_start(job, self._clock(), reason=reason, lasting=False, limits=self._retry_limits), job
            )
            raise
        return 1 if created is Created.REFUSED else 0

    # ------------------------------------------------------------------ passes

    def schedule(self, *, lease_for: timedelta | None = None) -> PassReport:
        """Run passes until no one asked for another, holding the lease (for `lease_for`, or the
        lease's default); a caller that finds the lease taken leaves a rerun request for the holder
        and returns at once."""
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
                refused_starts = self._run_pass(report)
                if refused_starts and report.passes < MAX_PASSES:
                    continue
                if self._lease.release(owner):
                    return report
        except BaseException:
            self._lease.abandon(owner)
            raise

    def _run_pass(self, report: PassReport) -> bool:
        """One decide-and-apply pass; True when a refused start freed capacity worth another pass.

        It reads what its decisions can depend on: every live job and the outside usage, exactly
        (`JobStore.in_use`), and per pool the first pending jobs as far as they can matter (see
        scheduling/window.py), never the whole queue.
        """
        report.passes += 1
        now = self._clock()
        config = self._config.load()
        held = self._store.in_use()
        ledger = Ledger.measure(Snapshot(jobs=tuple(held.live), external_usage=held.outside), config)
        pools = sorted(set(config.pools) | held.pools)
        live_names = {job.name for job in held.live}
        pending: dict[str, Job] = {}
        for pool, size in window_sizes(pools, ledger, backfill=config.backfill).items():
            for job in self._store.pending_window(pool, size):
                if job.name not in live_names and job.state is JobState.PENDING:
                    pending.setdefault(job.name, job)
        jobs = [*held.live, *pending.values()]
        decision = decide_pass(Snapshot(jobs=tuple(jobs), external_usage=held.outside), now, config)
        by_name = {job.name: job for job in jobs}
        after = dict(by_name)  # each job as this pass leaves it
        refused_before = len(report.refused)
        for action in decision.actions:
            with _isolated(action.job_name, type(action).__name__, report.job_errors):
                after[action.job_name] = self._apply(action, by_name[action.job_name], now, report)
        for job in held.live:
            if job.state is JobState.STOPPING and job.current_attempt is not None:
                with _isolated(job.name, "stop", report.job_errors):
                    self._stop(job.current_attempt.training_job_name)
        final = [job for job in after.values() if job.is_live]
        report.stuck = count_stuck(final, now, self._stuck_after)
        report.usage = pool_usage(final, held.outside, config, now, decision.heads)
        self._publish(report.usage)
        return len(report.refused) > refused_before

    def _apply(self, action: Action, decided: Job, now: datetime, report: PassReport) -> Job:
        """Carry out one action; returns the job as it now stands (unchanged when a race was lost).

        A pending job was decided over as the pending index showed it (no request, and perhaps a
        moment old): it is read by key first, and left for the next pass if it changed meanwhile.
        """
        job = self._whole(decided)
        if job is None:
            return decided
        if isinstance(action, StartJob):
            started = self._save(lifecycle.start(job, now, reason=action.reason, backfill=action.backfill), job)
            if started is None:
                return job
            created, current = self._create(started)
            if created is Created.YES:
                report.started.append(started)
            elif created is Created.REFUSED:
                report.refused.append(started.name)
            else:
                report.unconfirmed.append(started.name)
            return current
        if isinstance(action, PreemptJob):
            stopping = self._save(lifecycle.request_stop(job, now, preempt=True, reason=action.reason), job)
            if stopping is None:
                return job
            if stopping.current_attempt is not None:
                self._stop(stopping.current_attempt.training_job_name)
                report.preempted.append(stopping.name)
            return stopping
        if isinstance(action, ExplainWait):
            return self._save(lifecycle.explain(job, now, action.reason), job) or job
        assert_never(action)

    def _whole(self, decided: Job) -> Job | None:
        """The job as stored, if it is still the one decided over (same submission and version)."""
        if decided.is_live:
            return decided
        stored = self._store.get(decided.name)
        if stored is None or stored.job_id != decided.job_id or stored.version != decided.version:
            logger.info("job changed since the pending index showed it; skipped", extra={"job": decided.name})
            return None
        return stored

    def _create(self, job: Job) -> tuple[Created, Job]:
        """Create the job's current attempt; a refusal fails the job or sends it back with backoff,
        an unknown outcome leaves it `starting`. Returns what happened and the job as it now stands."""
        try:
            self._training.start_attempt(job)
        except StartRefused as refusal:
            logger.warning(
                "start refused", extra={"job": job.name, "lasting": refusal.lasting, "reason": refusal.reason}
            )
            refused = lifecycle.refuse_start(
                job, self._clock(), reason=refusal.reason, lasting=refusal.lasting, limits=self._retry_limits
            )
            return Created.REFUSED, self._save(refused, job) or job
        except StartOutcomeUnknown as unknown:
            logger.warning(
                "start outcome unknown; the attempt stays open until reconciliation asks SageMaker",
                extra={"job": job.name, "reason": unknown.reason},
            )
            return Created.UNKNOWN, job
        logger.info("attempt created", extra={"job": job.name, "attempt": job.attempts[-1].training_job_name})
        return Created.YES, job

    def _publish(self, usage: PoolUsageReport) -> None:
        """Publish the pass's pool usage; a throttled table only delays it to the next pass."""
        if self._usage_board is None:
            return
        try:
            self._usage_board.publish(usage)
        except ServiceUnavailable as exc:
            logger.warning("could not publish pool usage; the next pass does", extra={"error": str(exc)})

    def _stop(self, training_job_name: str) -> None:
        """Ask SageMaker to stop; a failure is logged, and reconciliation sends the stop again."""
        try:
            self._training.stop(training_job_name)
        except TrainingServiceError as exc:
            logger.warning(
                "stop failed; reconciliation retries", extra={"training_job": training_job_name, "error": str(exc)}
            )

    def _save(self, updated: Job, current: Job) -> Job | None:
        try:
            return self._store.save(updated, expected_version=current.version)
        except VersionConflict:
            logger.info("job changed under the pass; skipped", extra={"job": current.name})
            return None


def _is_open(job: Job, attempt_number: int) -> bool:
    attempt = job.current_attempt
    return attempt is not None and attempt.number == attempt_number and attempt.is_open


@contextmanager
def _isolated(job_name: str, step: str, job_errors: list[str]) -> Iterator[None]:
    """Run one job's step; an unexpected error is logged with the job's name and recorded in
    `job_errors`, and the caller goes on with the other jobs."""
    try:
        yield
    except Exception:
        logger.exception("unexpected error; the other jobs go on", extra={"job": job_name, "step": step})
        job_errors.append(job_name)
