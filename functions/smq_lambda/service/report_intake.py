"""SageMaker's reports (state-change events, and the describes of reconciliation) applied to jobs.

A report changes a job only through the pure domain (`apply_report`) and a conditional write; a
report the job has moved past may still stop an orphaned attempt, or count the instances a closed
attempt's training job holds until SageMaker reports its end.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aws_lambda_powertools import Logger

from smq_lambda.domain.jobs.model import Job, is_another_stacks
from smq_lambda.domain.jobs.training_status import (
    COMPLETED,
    FAILED,
    IN_PROGRESS,
    STOPPED,
    STOPPING,
    is_own_attempt,
    is_stale,
    reported_ended,
)
from smq_lambda.domain.sagemaker.held_instances import held_instances
from smq_lambda.errors import ServiceUnavailable, TrainingServiceError, VersionConflict
from smq_lambda.governance.governed_reports import apply_report
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.spot import OnDemandCapacity
from smq_lambda.governance.untyped_fields import tag_map
from smq_lambda.ports import (
    ConfigSource,
    JobStore,
    PolicySource,
    SpotInterruptionBook,
    TrainingEndListener,
    TrainingJobStatus,
)
from smq_lambda.scheduling.snapshot import SchedulerConfig, UnpooledPolicy
from smq_lambda.service.idle_watch import IdleWatch
from smq_lambda.service.job_effects import JobEffects, isolated
from smq_lambda.service.spot_interruptions import count_interruptions

logger = Logger(service="smq", child=True)

REPORT_RETRIES = 5
HOLDING_STATUSES = frozenset({IN_PROGRESS, STOPPING})
"""Statuses in which a training job holds its instances."""
ENDED_STATUSES = frozenset({COMPLETED, FAILED, STOPPED})
"""Statuses in which a training job's times (training, billable) are final."""
PASSING_ERRORS = (ServiceUnavailable, TrainingServiceError)
"""Errors of a service that may answer later (throttled, out of reach): a training-end listener
that meets one is told again when the report is delivered again."""


@dataclass
class ReportOutcome:
    """What one SageMaker report did: the job's new value when it changed."""

    changed: Job | None = None
    job_errors: list[str] = field(default_factory=list)
    outside: bool = False
    """The report was about a training job outside the queue (its tags named a queue job, but it
    is not that job's attempt): its caller records the instances it holds with `report_outside`."""
    listener_errors: list[str] = field(default_factory=list)
    """`<job> (<listener>)` for each training-end listener that failed for a lasting reason: counted
    with the job errors, but the report is not delivered again for it, where it would fail the same
    way until it reached the dead-letter queue."""


def on_demand_capacity(config: SchedulerConfig) -> OnDemandCapacity:
    """What `config` holds on demand, as the spot rules read it."""
    return OnDemandCapacity(
        config.pools, unpooled_unlimited=config.unpooled is UnpooledPolicy.UNLIMITED, teams=config.teams
    )


def current_policy(source: PolicySource | None) -> Policy:
    """The governance policy in force; the default one when no source is configured."""
    return source.load() if source is not None else Policy()


class ReportIntake:
    """Takes in SageMaker's reports about training jobs and applies each to its job."""

    def __init__(
        self,
        *,
        store: JobStore,
        effects: JobEffects,
        clock: Callable[[], datetime],
        config: ConfigSource,
        policy: PolicySource | None,
        idle_watch: IdleWatch | None,
        stack: str | None = None,
        training_end_listeners: Sequence[TrainingEndListener] = (),
        spot_interruptions: SpotInterruptionBook | None = None,
    ) -> None:
        """`config`: the queue's configuration, whose on-demand pools say where a spot job may fall
        back (read with every report, from the source's cache; a report fails while no valid
        configuration is in force, and is delivered again). `stack`: this stack's name; a training
        job tagged with another smq stack's is outside
        this queue whatever job its tags name, and only its instances are counted.
        `training_end_listeners`: told of each own attempt's end in SageMaker (costs, durations).
        `spot_interruptions`: where each own attempt's spot interruptions are counted, once each."""
        self._store = store
        self._effects = effects
        self._clock = clock
        self._config = config
        self._policy = policy
        self._idle_watch = idle_watch
        self._stack = stack
        self._training_end_listeners = tuple(training_end_listeners)
        self._spot_interruptions = spot_interruptions

    def report(self, job_name: str, attempt_number: int, status: TrainingJobStatus) -> ReportOutcome:
        """Apply one SageMaker status report (event or describe) to its job. Duplicates and reports of
        old attempts change nothing; a report that a closed attempt is still running stops that
        orphan; a report whose training job is not the attempt's own is about a job outside the queue.
        The governance policy has its say first (spot fallback, MaxWaitTimeExceeded, failure retry);
        a spot attempt that falls back is stopped after the write, and should that stop fail, the
        attempt's next report (an interrupted spot job keeps reporting) stops it as an orphan. The
        owner hears of a fallback or a retry once its write succeeded: a duplicate report, which
        changes nothing, tells no one again."""
        outcome = ReportOutcome()
        with isolated(job_name, "report", outcome.job_errors):
            outcome.changed = self.apply(job_name, attempt_number, status, outcome=outcome)
        return outcome

    def apply(
        self,
        job_name: str,
        attempt_number: int,
        status: TrainingJobStatus,
        alarm_names: Collection[str] | None = None,
        *,
        outcome: ReportOutcome | None = None,
    ) -> Job | None:
        """The job as the report left it, or None when it did not change it. `alarm_names`: the idle
        alarms reconciliation listed, so a training job's alarms are put only when missing; None (an
        event) puts them whenever it reports `Training`. A report about a training job outside the
        queue marks `outcome` so."""
        policy = current_policy(self._policy)
        on_demand = on_demand_capacity(self._config.load())
        for _ in range(REPORT_RETRIES):
            job = None if is_another_stacks(status.tags or {}, self._stack) else self._store.get(job_name)
            if job is None or not is_own_attempt(job, attempt_number, status.name):
                logger.info(
                    "training job outside the queue",
                    extra={"training_job": status.name, "tagged_job": job_name, "tagged_attempt": attempt_number},
                )
                if outcome is not None:
                    outcome.outside = True
                return None
            if self._spot_interruptions is not None:
                count_interruptions(self._spot_interruptions, job, attempt_number, status, self._clock())
            effect = apply_report(job, attempt_number, status, self._clock(), policy, on_demand)
            if effect is None:
                if not is_stale(job, attempt_number, status):
                    self._track_closed_attempt(job, job, attempt_number, status)
                self._stop_if_orphan(job, attempt_number, status)
                if self._idle_watch is not None:
                    self._idle_watch.on_report(job, job, attempt_number, status, policy, alarm_names)
                self._tell_training_end(job, attempt_number, status, outcome)
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
                self._effects.stop(effect.stop)
            if self._idle_watch is not None:
                self._idle_watch.on_report(job, saved, attempt_number, status, policy, alarm_names)
            if effect.notice is not None:
                self._effects.notify(effect.notice)
            self._tell_training_end(saved, attempt_number, status, outcome)
            return saved
        logger.warning("report kept losing races; reconciliation will repair", extra={"job": job_name})
        return None

    def _tell_training_end(
        self, job: Job, attempt_number: int, status: TrainingJobStatus, outcome: ReportOutcome | None
    ) -> None:
        """Tell every listener, each on its own, so one that fails (the cost recorder) keeps no other
        (the warm-pool keeper) from hearing; each failure is logged with the listener's name. Once
        all were told, a failure that may pass (PASSING_ERRORS, also as the cause) is raised: the
        report fails and its redelivery tells every listener again, which adds nothing where one
        succeeded (listeners record idempotently). Any other failure would recur at every delivery:
        it goes to `outcome.listener_errors`, counted but not delivered again; without an outcome
        (reconciliation's reports) it is raised for the caller to count."""
        if status.status not in ENDED_STATUSES:
            return
        failures: list[tuple[str, Exception]] = []
        for listener in self._training_end_listeners:
            try:
                listener.on_training_end(job, attempt_number, status)
            except Exception as error:
                listener_name = type(listener).__name__
                logger.exception(
                    "a training-end listener failed; the others are still told",
                    extra={"job": job.name, "training_job": status.name, "listener": listener_name},
                )
                failures.append((listener_name, error))
        passing = [error for _, error in failures if _may_pass(error)]
        if passing:
            raise passing[0]
        if failures and outcome is None:
            raise failures[0][1]
        if outcome is not None:
            outcome.listener_errors += [f"{job.name} ({listener_name})" for listener_name, _ in failures]

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
        attempt = after.attempt(attempt_number)
        held = after.demand if attempt is None else after.held_by(attempt)
        self._store.record_outside(status.name, held, holding=holding)

    def report_outside(self, detail: Mapping[str, Any]) -> ReportOutcome:
        """A state change of a training job outside the queue (the event's detail, with Tags as a
        map): the instances it holds while in progress are recorded for the passes (removed when it
        ends; a lost or reordered event is corrected by reconciliation), and it gets idle alarms
        while it trains when `idle.enforce_outside_queue` is on, unless another smq stack tagged it
        as its own."""
        outcome = ReportOutcome()
        name = str(detail.get("TrainingJobName"))
        with isolated(name, "report_outside", outcome.job_errors):
            held = held_instances(detail).counts
            if held:
                holding = detail.get("TrainingJobStatus") in HOLDING_STATUSES
                self._store.record_outside(name, held, holding=holding)
            if self._idle_watch is not None and not is_another_stacks(tag_map(detail.get("Tags")), self._stack):
                self._idle_watch.on_outside_report(detail, current_policy(self._policy))
        return outcome

    def _stop_if_orphan(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        """Stop one of the job's own attempts that runs although the job has moved past it. Only
        called for reports `is_own_attempt` accepted, so it never stops a job the queue did not start.
        A report older than the attempt's own end report (SageMaker said it completed or failed: it
        cannot run again) is a late delivery, and stops nothing."""
        if status.status != IN_PROGRESS:
            return
        if reported_ended(job, attempt_number):
            logger.info("report older than the attempt's end; ignored", extra={"training_job": status.name})
            return
        attempt = job.current_attempt
        is_current_and_open = attempt is not None and attempt.number == attempt_number and attempt.is_open
        if not is_current_and_open:
            logger.warning("stopping an attempt the queue no longer wants", extra={"job": job.name})
            self._effects.stop(status.name)


def _may_pass(error: BaseException) -> bool:
    return isinstance(error, PASSING_ERRORS) or isinstance(error.__cause__, PASSING_ERRORS)


def _is_open(job: Job, attempt_number: int) -> bool:
    attempt = job.current_attempt
    return attempt is not None and attempt.number == attempt_number and attempt.is_open
