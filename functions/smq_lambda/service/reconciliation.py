"""Reconciliation: repair what lost or reordered events left behind, by asking SageMaker.

It describes every live attempt and applies the answer as a report; re-creates a `starting`
attempt SageMaker never got; replaces the outside usage the events recorded with what SageMaker
lists; sweeps the idle alarms no open attempt owns; and acts on every idle alarm still in ALARM as
its notification would have (service/idle_stop.py), so a notification lost for good stops the job
at the next reconciliation; and describes every warm pool still held (service/warm_pool_intake.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime

from aws_lambda_powertools import Logger

from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.states import RELEASING_STATES, JobState
from smq_lambda.domain.jobs.training_status import IN_PROGRESS, vanished
from smq_lambda.errors import TrainingServiceError, VersionConflict
from smq_lambda.ports import ConfigSource, InUse, JobStore, Notifier, PolicySource, TrainingService
from smq_lambda.service.idle_stop import IdleStop
from smq_lambda.service.idle_watch import IdleWatch
from smq_lambda.service.job_effects import Created, JobEffects, isolated
from smq_lambda.service.report_intake import ReportIntake, current_policy
from smq_lambda.service.warm_pool_intake import WarmPoolKeeper

logger = Logger(service="smq", child=True)


@dataclass
class Reconciliation:
    """What one reconciliation did: how many jobs it repaired, and which ones failed unexpectedly."""

    repaired: int = 0
    job_errors: list[str] = field(default_factory=list)
    pending_by_pool: dict[str, int] = field(default_factory=dict)
    """Pending jobs per pool, counted once per reconciliation (QueueDepth): a pass reads only the
    front of each pool, so it does not know the depth."""


class Reconciler:
    def __init__(
        self,
        *,
        store: JobStore,
        training: TrainingService,
        config: ConfigSource,
        clock: Callable[[], datetime],
        reports: ReportIntake,
        effects: JobEffects,
        policy: PolicySource | None,
        idle_watch: IdleWatch | None,
        notifier: Notifier | None = None,
        warm_pools: WarmPoolKeeper | None = None,
    ) -> None:
        """`notifier`: where the re-check of idle alarms tells owners of the stops it makes.
        `warm_pools`: the warm pools still held, each described (None: the stack keeps none)."""
        self._store = store
        self._training = training
        self._config = config
        self._clock = clock
        self._reports = reports
        self._effects = effects
        self._policy = policy
        self._idle_watch = idle_watch
        self._warm_pools = warm_pools
        self._idle_stop = (
            IdleStop(
                store=store,
                training=training,
                alarms=idle_watch.alarms,
                policy=policy,
                clock=clock,
                prefix=idle_watch.prefix,
                notifier=notifier,
            )
            if idle_watch is not None
            else None
        )

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
                with isolated(job.name, "reconcile", result.job_errors):
                    result.repaired += self._reconcile(job, attempt, alarm_names)
        if self._idle_watch is not None and alarm_names is not None:
            open_attempts = [
                job.current_attempt.training_job_name
                for job in jobs
                if job.is_live and job.current_attempt is not None and job.current_attempt.is_open
            ]
            policy = current_policy(self._policy)
            with isolated("(idle alarms)", "sweep", result.job_errors):
                self._idle_watch.sweep(alarm_names, open_attempts, policy, self._training)
        self._recheck_idle_alarms(result)
        if self._warm_pools is not None:
            with isolated("(warm pools)", "reconcile", result.job_errors):
                result.repaired += self._warm_pools.reconcile(self._training)
        return result

    def _recheck_idle_alarms(self, result: Reconciliation) -> None:
        """Act on every idle alarm in ALARM as on its notification: last, after the reports have
        deleted the alarms of ended attempts. A stop made here counts as a repair."""
        if self._idle_watch is None or self._idle_stop is None:
            return
        for notification in self._idle_watch.in_alarm() or ():
            with isolated(notification.alarm.training_job_name, "idle re-check", result.job_errors):
                if self._idle_stop.handle(notification).stopped is not None:
                    result.repaired += 1

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
        if self._reports.apply(job.name, attempt.number, status, alarm_names) is not None:
            return 1
        if job.state in RELEASING_STATES and status.status == IN_PROGRESS:
            self._effects.stop(attempt.training_job_name)
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
            created, _ = self._effects.create(job)
        except Exception as exc:
            self._effects.refuse(job, f"could not create the training job: {type(exc).__name__}", lasting=False)
            raise
        return 1 if created is Created.REFUSED else 0
