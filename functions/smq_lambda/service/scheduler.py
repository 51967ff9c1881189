"""The scheduler's use cases: take a SageMaker report, reconcile with SageMaker, run a pass.

Each use case loads what it needs through the ports, asks the pure domain what to do, and writes
the result conditionally. A lost race (VersionConflict) is never an error: the other writer's change
stands, and the next report or pass sees it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from aws_lambda_powertools import Logger

from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.domain.states import RELEASING_STATES, JobState
from smq_lambda.domain.training_status import IN_PROGRESS, apply_status, vanished
from smq_lambda.errors import StartRefused, TrainingServiceError, VersionConflict
from smq_lambda.ports import ConfigSource, JobStore, PassLease, TrainingJobStatus, TrainingService
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import Snapshot

logger = Logger(service="smq", child=True)

REPORT_RETRIES = 5
MAX_PASSES = 5
"""Bound on back-to-back passes in one call (reruns requested meanwhile, refused starts)."""


@dataclass
class PassReport:
    """What the passes of one `schedule()` call did, for metrics and logs."""

    passes: int = 0
    started: list[Job] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    pending_by_pool: dict[str, int] = field(default_factory=dict)
    skipped_busy: bool = False


class Scheduler:
    def __init__(
        self,
        *,
        store: JobStore,
        training: TrainingService,
        config: ConfigSource,
        lease: PassLease,
        clock: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._training = training
        self._config = config
        self._lease = lease
        self._clock = clock

    def report(self, job_name: str, attempt_number: int, status: TrainingJobStatus) -> Job | None:
        """Apply one SageMaker status report (event or describe) to its job; returns the new value
        when the job changed. Duplicates and reports of old attempts change nothing; a report that
        a closed attempt is still running stops that orphan."""
        for _ in range(REPORT_RETRIES):
            job = self._store.get(job_name)
            if job is None:
                return None
            updated = apply_status(job, attempt_number, status, self._clock())
            if updated is None:
                self._stop_if_orphan(job, attempt_number, status)
                return None
            try:
                saved = self._store.save(updated, expected_version=job.version)
            except VersionConflict:
                continue
            logger.info("job changed", extra={"job": job_name, "state": saved.state, "sagemaker": status.status})
            return saved
        logger.warning("report kept losing races; reconciliation will repair", extra={"job": job_name})
        return None

    def _stop_if_orphan(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        if status.status != IN_PROGRESS:
            return
        attempt = job.current_attempt
        is_current_and_open = attempt is not None and attempt.number == attempt_number and attempt.is_open
        if not is_current_and_open:
            logger.warning("stopping an attempt the queue no longer wants", extra={"job": job.name})
            self._stop(status.name)

    def reconcile(self) -> int:
        """Repair what lost events left behind: ask SageMaker about every live attempt. Returns how
        many jobs changed."""
        changed = 0
        for job in self._store.active_jobs():
            attempt = job.current_attempt
            if not job.is_live or attempt is None:
                continue
            try:
                status = self._training.describe(attempt.training_job_name)
            except TrainingServiceError as exc:
                logger.warning("could not describe; next reconciliation retries", extra={"job": job.name, "error": str(exc)})
                continue
            if status is None:
                changed += self._repair_missing(job)
                continue
            if self.report(job.name, attempt.number, status) is not None:
                changed += 1
            elif job.state in RELEASING_STATES and status.status == IN_PROGRESS:
                self._stop(attempt.training_job_name)
        return changed

    def _repair_missing(self, job: Job) -> int:
        if job.state is JobState.STARTING:
            self._create(job)
            return 0
        try:
            self._store.save(vanished(job, self._clock()), expected_version=job.version)
        except VersionConflict:
            return 0
        return 1

    def schedule(self) -> PassReport:
        """Run passes until no one asked for another, holding the lease; a caller that finds the
        lease taken leaves a rerun request for the holder and returns at once."""
        report = PassReport()
        owner = uuid.uuid4().hex
        if not self._lease.try_acquire(owner, self._clock()):
            self._lease.request_rerun()
            if not self._lease.try_acquire(owner, self._clock()):
                report.skipped_busy = True
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
        """One decide-and-apply pass; True when a refused start freed capacity worth another pass."""
        report.passes += 1
        now = self._clock()
        config = self._config.load()
        jobs = self._store.active_jobs()
        live_attempts = [job.current_attempt.training_job_name for job in jobs if job.is_live and job.current_attempt]
        external = self._training.external_usage(config.pools.keys(), live_attempts)
        actions = decide(Snapshot(jobs=tuple(jobs), external_usage=external), now, config)
        by_name = {job.name: job for job in jobs}
        refused_before = len(report.refused)
        for action in actions:
            self._apply(action, by_name[action.job_name], now, report)
        for job in jobs:
            if job.state is JobState.STOPPING and job.current_attempt is not None:
                self._stop(job.current_attempt.training_job_name)
        report.pending_by_pool = _pending_by_pool(jobs, report)
        return len(report.refused) > refused_before

    def _apply(self, action: Action, job: Job, now: datetime, report: PassReport) -> None:
        if isinstance(action, StartJob):
            started = self._save(lifecycle.start(job, now, reason=action.reason, backfill=action.backfill), job)
            if started is not None and self._create(started):
                report.started.append(started)
            elif started is not None:
                report.refused.append(started.name)
        elif isinstance(action, PreemptJob):
            stopping = self._save(lifecycle.request_stop(job, now, preempt=True, reason=action.reason), job)
            if stopping is not None and stopping.current_attempt is not None:
                self._stop(stopping.current_attempt.training_job_name)
                report.preempted.append(stopping.name)
        elif isinstance(action, ExplainWait):
            self._save(lifecycle.explain(job, now, action.reason), job)

    def _create(self, job: Job) -> bool:
        """Create the job's current attempt; a refusal fails the job or sends it back with backoff."""
        try:
            self._training.start_attempt(job)
        except StartRefused as refusal:
            logger.warning("start refused", extra={"job": job.name, "lasting": refusal.lasting, "reason": refusal.reason})
            refused = lifecycle.refuse_start(job, self._clock(), reason=refusal.reason, lasting=refusal.lasting)
            self._save(refused, job)
            return False
        logger.info("attempt created", extra={"job": job.name, "attempt": job.attempts[-1].training_job_name})
        return True

    def _stop(self, training_job_name: str) -> None:
        """Ask SageMaker to stop; a failure is logged, and reconciliation sends the stop again."""
        try:
            self._training.stop(training_job_name)
        except TrainingServiceError as exc:
            logger.warning("stop failed; reconciliation retries", extra={"training_job": training_job_name, "error": str(exc)})

    def _save(self, updated: Job, current: Job) -> Job | None:
        try:
            return self._store.save(updated, expected_version=current.version)
        except VersionConflict:
            logger.info("job changed under the pass; skipped", extra={"job": current.name})
            return None


def _pending_by_pool(jobs: list[Job], report: PassReport) -> dict[str, int]:
    started = {job.name for job in report.started}
    depth: dict[str, int] = {}
    for job in jobs:
        if job.state is JobState.PENDING and job.name not in started:
            for pool in job.demand:
                depth[pool] = depth.get(pool, 0) + 1
    return depth
