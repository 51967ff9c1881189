"""Scheduler Lambda: batches from the scheduler queue, and the reconciliation schedule.

The scheduler queue (template.yaml) holds SageMaker state changes, which EventBridge puts there,
and the API's requests for a pass (kicks). Each batch is applied record by record, then ONE
scheduling pass runs for the whole batch (`handle_batch`): a burst of events costs one pass. A direct
invocation (the reconciliation schedule, or anything else) reconciles or applies what it carries and
ends with a pass too (`handle`), because every trigger may have freed or claimed capacity.

Every invocation publishes: JobsStarted, JobsPreempted, JobsStoppedForPlanWindow, StartsRefused,
JobErrors (a job's or a training-end listener's error, isolated), StuckJobs, InvariantViolations
(scheduling/invariants.py, each also logged), per pool WaitTime, PoolInUse and PoolCapacity;
reconciliations add JobsRepaired and QueueDepth (pool_metrics.py); with quotas, per team and pool
TeamInUse, TeamBorrowed, TeamPending, TeamWaitTime (team_metrics.py); ends of attempts TeamSpendUsd
(service/cost_recorder.py); starts after an estimate StartEstimateErrorShare and StartWithinBand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from smq_lambda.domain.jobs.model import queue_tags
from smq_lambda.handlers import scheduler_input
from smq_lambda.handlers.composition import default_outside_jobs, default_scheduler
from smq_lambda.handlers.estimate_metrics import record_estimate_metrics
from smq_lambda.handlers.pool_metrics import record_pool_metrics
from smq_lambda.handlers.scheduler_input import SAGEMAKER_SOURCE, SCHEDULE_SOURCE, Kick, Malformed, StateChange
from smq_lambda.handlers.team_metrics import record_team_metrics
from smq_lambda.handlers.tracing import traced

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from smq_lambda.service.outside_jobs import OutsideJobs
    from smq_lambda.service.passes import PassReport
    from smq_lambda.service.reconciliation import Reconciliation
    from smq_lambda.service.scheduler import Scheduler

logger = Logger(service="smq")
NAMESPACE = "smq"
AFTER_ESTIMATES_S = 10.0
"""Seconds an invocation keeps, after its start estimates, to publish them and its metrics."""
metrics = Metrics(namespace=NAMESPACE, service="smq")


def _now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------- the entry point


@metrics.log_metrics
@traced
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if scheduler_input.is_sqs_batch(event):
        summary = handle_batch(event, default_scheduler(), context, outside_jobs=default_outside_jobs())
        logger.info("batch handled", extra={"summary": summary})
        # Only what the event source mapping reads: the messages to hand out again.
        return {"batchItemFailures": summary["batchItemFailures"]}
    governed = isinstance(event, dict) and event.get("source") in (SAGEMAKER_SOURCE, SCHEDULE_SOURCE)
    return handle(event, default_scheduler(), context, outside_jobs=default_outside_jobs() if governed else None)


def handle_batch(
    event: dict[str, Any],
    scheduler: Scheduler,
    context: LambdaContext | None = None,
    *,
    outside_jobs: OutsideJobs | None = None,
) -> dict[str, Any]:
    """One SQS batch of the scheduler queue: apply every state change in it, then run one pass.

    A record whose report fails unexpectedly is returned to the queue alone (`batchItemFailures`):
    SQS hands it out again after the visibility timeout, and after maxReceiveCount receives parks it
    in the dead-letter queue. A record that is neither a state change nor a kick is logged and
    dropped: delivering it again would not make it readable. The pass runs whatever the records
    did; if it raises, the invocation fails, and Lambda returns every message of the batch to the
    queue (the kicks in it asked for that pass; the state changes in it are applied again, which
    changes nothing). Returns the summary of `handle` plus the counts and `batchItemFailures`.
    """
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    batch = _Batch(scheduler, outside_jobs)
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    response = process_partial_response(event=event, record_handler=batch.apply, processor=processor, context=context)
    failures = list(response.get("batchItemFailures", []))
    summary = _schedule(scheduler, context, batch.job_errors)
    counts = {"records": len(event["Records"]), "failed": len(failures), "dropped": batch.dropped}
    return {**summary, **counts, "batchItemFailures": failures}


def handle(
    event: dict[str, Any],
    scheduler: Scheduler,
    context: LambdaContext | None = None,
    *,
    outside_jobs: OutsideJobs | None = None,
) -> dict[str, Any]:
    """Route one direct invocation, then schedule. Returns a summary (useful in logs and tests).

    A SageMaker state change is also checked against the governance policy by `outside_jobs`
    (when given), which stops a training job the queue did not start that breaks it; reconciliation
    also sweeps the recent ones, for `Starting` events that were lost.

    With a Lambda context, the pass lease lasts as long as this invocation can (see
    adapters/dynamodb_lease.py), so a pass killed by the timeout blocks no other for long.
    """
    source = event.get("source") if isinstance(event, dict) else None
    job_errors: list[str] = []
    reconciliation = None
    if source == SAGEMAKER_SOURCE:
        try:
            failed, listener_errors = _report(scheduler_input.state_change(event), scheduler)
            job_errors += failed + listener_errors
        except Malformed as exc:
            logger.warning("not a training job state change", extra={"error": str(exc)})
        if outside_jobs is not None:
            job_errors += _check_outside(event.get("detail"), outside_jobs)
    elif source == SCHEDULE_SOURCE:
        reconciliation = scheduler.reconcile()
        metrics.add_metric(name="JobsRepaired", unit=MetricUnit.Count, value=reconciliation.repaired)
        job_errors += reconciliation.job_errors
        if outside_jobs is not None:
            job_errors += _sweep_outside(outside_jobs)
    else:
        logger.info("scheduling pass requested", extra={"source": source})
    return _schedule(scheduler, context, job_errors, reconciliation)


@dataclass
class _Batch:
    """Applies the records of one batch, and remembers what they found."""

    scheduler: Scheduler
    outside_jobs: OutsideJobs | None
    job_errors: list[str] = field(default_factory=list)
    dropped: int = 0

    def apply(self, record: SQSRecord) -> None:
        """The powertools record handler: raising marks the record failed (delivered again)."""
        try:
            message = scheduler_input.message(record.body)
        except Malformed as exc:
            logger.warning(
                "dropped a message the scheduler cannot read",
                extra={"message_id": record.message_id, "error": str(exc)},
            )
            self.dropped += 1
            return
        if isinstance(message, Kick):
            logger.info("scheduling pass requested", extra={"source": "smq.api", "reason": message.reason})
            return
        errors = self._apply(message)
        if errors:
            self.job_errors += errors
            raise ReportFailed(message.training_job_name, record.message_id)

    def _apply(self, change: StateChange) -> list[str]:
        try:
            errors, listener_errors = _report(change, self.scheduler)
            self.job_errors += listener_errors
            if self.outside_jobs is not None:
                errors += _check_outside(change.detail, self.outside_jobs)
        except Exception:
            logger.exception("could not apply a state change", extra={"training_job": change.training_job_name})
            return [change.training_job_name]
        return errors


class ReportFailed(Exception):
    """A state change of the batch was not fully applied; SQS delivers it again."""

    def __init__(self, training_job_name: str, message_id: str) -> None:
        super().__init__(f"the state change of {training_job_name} (message {message_id}) failed; delivered again")


# ---------------------------------------------------------------- the steps


def _report(change: StateChange, scheduler: Scheduler) -> tuple[list[str], list[str]]:
    """Apply a SageMaker state change: the jobs whose report failed, and the listener errors only counted."""
    claimed = queue_tags(change.status.tags or {})
    if claimed is None:
        logger.info("training job outside the queue", extra={"training_job": change.training_job_name})
        return scheduler.report_outside(change.detail).job_errors, []
    job_name, attempt = claimed
    logger.append_keys(job=job_name)
    try:
        outcome = scheduler.report(job_name, attempt, change.status)
        errors = list(outcome.job_errors)
        if outcome.outside:  # its tags name a queue job, but it is not that job's attempt
            errors += scheduler.report_outside(change.detail).job_errors
    finally:
        logger.remove_keys(["job"])
    return errors, outcome.listener_errors


def _check_outside(detail: object, outside_jobs: OutsideJobs) -> list[str]:
    """Apply the policy to a training job outside the queue; an unexpected error is logged and
    counted like one job's, and the scheduling pass still runs."""
    if not isinstance(detail, dict):
        return []
    try:
        outside_jobs.check(detail)
    except Exception:
        name = str(detail.get("TrainingJobName"))
        logger.exception("could not apply the policy to a training job", extra={"training_job": name})
        return [name]
    return []


def _sweep_outside(outside_jobs: OutsideJobs) -> list[str]:
    """Reconciliation's policy sweep; an unexpected error is logged and counted like one job's."""
    try:
        outside_jobs.sweep()
    except Exception:
        logger.exception("could not sweep training jobs outside the queue")
        return ["(outside jobs)"]
    return []


def _schedule(
    scheduler: Scheduler,
    context: LambdaContext | None,
    job_errors: list[str],
    reconciliation: Reconciliation | None = None,
) -> dict[str, Any]:
    """The pass every invocation ends with, its metrics and its summary."""
    lease_for = None if context is None else _lease_duration(context.get_remaining_time_in_millis())
    report = scheduler.schedule(lease_for=lease_for, time_left=None if context is None else _time_left(context))
    job_errors = job_errors + report.job_errors
    _record(report, job_errors, reconciliation)
    return {
        "passes": report.passes,
        "started": [job.name for job in report.started],
        "preempted": report.preempted,
        "plan_window_stops": report.plan_window_stops,
        "refused": report.refused,
        "unconfirmed": report.unconfirmed,
        "busy": report.skipped_busy,
        "job_errors": job_errors,
        "stuck": report.stuck,
        "invariant_violations": [str(violation) for violation in report.invariant_violations],
    }


def _time_left(context: LambdaContext) -> Callable[[], float]:
    """Seconds the invocation has left for the read-only work after the lease (start estimates),
    keeping AFTER_ESTIMATES_S for publishing them and the metrics."""
    return lambda: context.get_remaining_time_in_millis() / 1000 - AFTER_ESTIMATES_S


def _lease_duration(remaining_millis: int) -> timedelta:
    from smq_lambda.adapters.dynamodb_lease import lease_duration

    return lease_duration(remaining_millis)


def _record(report: PassReport, job_errors: list[str], reconciliation: Reconciliation | None) -> None:
    metrics.add_metric(name="JobsStarted", unit=MetricUnit.Count, value=len(report.started))
    metrics.add_metric(name="JobsPreempted", unit=MetricUnit.Count, value=len(report.preempted))
    metrics.add_metric(name="JobsStoppedForPlanWindow", unit=MetricUnit.Count, value=len(report.plan_window_stops))
    metrics.add_metric(name="StartsRefused", unit=MetricUnit.Count, value=len(report.refused))
    metrics.add_metric(name="JobErrors", unit=MetricUnit.Count, value=len(job_errors))
    metrics.add_metric(name="StuckJobs", unit=MetricUnit.Count, value=report.stuck)
    metrics.add_metric(name="InvariantViolations", unit=MetricUnit.Count, value=len(report.invariant_violations))
    record_pool_metrics(report, reconciliation, _now(), NAMESPACE)
    record_team_metrics(report.summary, NAMESPACE)
    record_estimate_metrics(report.start_accuracy, NAMESPACE)
