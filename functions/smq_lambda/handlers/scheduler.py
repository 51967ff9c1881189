"""Scheduler Lambda: SageMaker state changes, the reconciliation schedule, and kicks from the API.

Every invocation ends with a scheduling pass, because every trigger may have freed or claimed
capacity. Events are parsed with powertools; anything unrecognised still gets a pass, never an error.
Every invocation publishes what it did and what it found: JobsStarted, JobsPreempted, StartsRefused,
JobErrors (one job's unexpected error, isolated so the others went on), StuckJobs, and per pool
QueueDepth, WaitTime, PoolInUse and PoolCapacity; reconciliations add JobsRepaired.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.parameters import SSMProvider
from aws_lambda_powertools.utilities.parser import ValidationError, parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from smq_lambda.adapters.cloudwatch_alarms import CloudWatchIdleAlarms
from smq_lambda.adapters.dynamodb_lease import DynamoPassLease, lease_duration
from smq_lambda.adapters.dynamodb_pool_usage import DynamoPoolUsageBoard
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.sagemaker import SageMakerTrainingService
from smq_lambda.adapters.sns_notifier import SnsNotifier
from smq_lambda.adapters.ssm_config import SsmConfigSource
from smq_lambda.adapters.ssm_policy import SsmPolicySource
from smq_lambda.domain.lifecycle import StartRetryLimits
from smq_lambda.domain.model import queue_tags
from smq_lambda.errors import ConfigError
from smq_lambda.governance.idle import AlarmPrefix
from smq_lambda.governance.policy import Policy
from smq_lambda.ports import TrainingJobStatus
from smq_lambda.service.idle_watch import IdleWatch
from smq_lambda.service.outside_jobs import OutsideJobs
from smq_lambda.service.scheduler import PassReport, Scheduler
from smq_lambda.settings import Settings

logger = Logger(service="smq")
NAMESPACE = "smq"
metrics = Metrics(namespace=NAMESPACE, service="smq")
tracer = Tracer(service="smq")

SAGEMAKER_SOURCE = "aws.sagemaker"
SCHEDULE_SOURCE = "aws.events"


class TrainingJobStateDetail(BaseModel):
    TrainingJobName: str
    TrainingJobStatus: str
    SecondaryStatus: str | None = None
    FailureReason: str | None = None
    SecondaryStatusTransitions: list[dict[str, Any]] = Field(default_factory=list)
    TrainingTimeInSeconds: int | None = None
    Tags: dict[str, str] = Field(default_factory=dict)


class TrainingJobStateChange(EventBridgeModel):
    detail: TrainingJobStateDetail


def _now() -> datetime:
    return datetime.now(UTC)


@cache
def default_scheduler() -> Scheduler:
    """Built once per cold start from the environment the template sets."""
    settings = Settings.from_env()
    dynamodb = boto3.client("dynamodb")
    return Scheduler(
        store=DynamoJobStore(settings.table_name, dynamodb, ttl_days=settings.finished_ttl_days),
        training=SageMakerTrainingService(boto3.client("sagemaker")),
        config=SsmConfigSource(settings, SSMProvider(boto3_client=boto3.client("ssm"))),
        lease=DynamoPassLease(settings.table_name, dynamodb),
        clock=_now,
        usage_board=DynamoPoolUsageBoard(settings.table_name, dynamodb),
        retry_limits=StartRetryLimits(
            max_refusals=settings.max_start_refusals,
            max_duration=timedelta(hours=settings.max_start_refusal_hours),
        ),
        stuck_after=timedelta(seconds=settings.stuck_after_seconds),
        policy=default_policy(),
        idle_watch=_idle_watch(settings),
    )


def _idle_watch(settings: Settings) -> IdleWatch | None:
    """None without an idle topic: no idle alarms are put."""
    if not settings.idle_topic_arn:
        return None
    prefix = idle_alarm_prefix(settings)
    return IdleWatch(CloudWatchIdleAlarms(boto3.client("cloudwatch"), prefix), settings.idle_topic_arn, prefix)


def idle_alarm_prefix(settings: Settings) -> AlarmPrefix:
    """Required wherever idle alarms are put, listed or acted on: with no prefix there is no telling
    this stack's alarms from another's, and a sweep under the bare `smq-idle-` would delete them."""
    if settings.idle_alarm_prefix is None:
        raise ConfigError("SMQ_IDLE_ALARM_PREFIX is not set: the idle alarms of this stack cannot be told apart")
    return settings.idle_alarm_prefix


class _DefaultPolicy:
    """No policy parameter configured: the default policy (no required tag, no limit)."""

    def load(self) -> Policy:
        return Policy()


@cache
def default_policy() -> SsmPolicySource | _DefaultPolicy:
    """The policy source both the scheduler and `outside_jobs` read: one cache, one report of an
    invalid document per cold start."""
    settings = Settings.from_env()
    if settings.policy_parameter:
        return SsmPolicySource(settings.policy_parameter, SSMProvider(boto3_client=boto3.client("ssm")))
    return _DefaultPolicy()


@cache
def default_outside_jobs() -> OutsideJobs:
    """The governance of training jobs outside the queue, built once per cold start."""
    settings = Settings.from_env()
    policy = default_policy()
    return OutsideJobs(
        store=DynamoJobStore(settings.table_name, boto3.client("dynamodb"), ttl_days=settings.finished_ttl_days),
        training=SageMakerTrainingService(boto3.client("sagemaker")),
        policy=policy,
        notifier=SnsNotifier(settings.policy_topic_arn, boto3.client("sns")) if settings.policy_topic_arn else None,
        clock=_now,
    )


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    governed = isinstance(event, dict) and event.get("source") in (SAGEMAKER_SOURCE, SCHEDULE_SOURCE)
    return handle(event, default_scheduler(), context, outside_jobs=default_outside_jobs() if governed else None)


def handle(
    event: dict[str, Any],
    scheduler: Scheduler,
    context: LambdaContext | None = None,
    *,
    outside_jobs: OutsideJobs | None = None,
) -> dict[str, Any]:
    """Route one invocation, then schedule. Returns a summary (useful in logs and tests).

    A SageMaker state change is also checked against the governance policy by `outside_jobs`
    (when given), which stops a training job the queue did not start that breaks it; reconciliation
    also sweeps the recent ones, for `Starting` events that were lost.

    With a Lambda context, the pass lease lasts as long as this invocation can (see
    adapters/dynamodb_lease.py), so a pass killed by the timeout blocks no other for long.
    """
    source = event.get("source") if isinstance(event, dict) else None
    job_errors: list[str] = []
    if source == SAGEMAKER_SOURCE:
        job_errors += _on_state_change(event, scheduler)
        if outside_jobs is not None:
            job_errors += _check_outside(event, outside_jobs)
    elif source == SCHEDULE_SOURCE:
        reconciliation = scheduler.reconcile()
        metrics.add_metric(name="JobsRepaired", unit=MetricUnit.Count, value=reconciliation.repaired)
        job_errors += reconciliation.job_errors
        if outside_jobs is not None:
            job_errors += _sweep_outside(outside_jobs)
    else:
        logger.info("scheduling pass requested", extra={"source": source})
    report = scheduler.schedule(lease_for=_lease_for(context))
    job_errors += report.job_errors
    _record(report, job_errors)
    return {
        "passes": report.passes,
        "started": [job.name for job in report.started],
        "preempted": report.preempted,
        "refused": report.refused,
        "unconfirmed": report.unconfirmed,
        "busy": report.skipped_busy,
        "job_errors": job_errors,
        "stuck": report.stuck,
    }


def _lease_for(context: LambdaContext | None) -> timedelta | None:
    return None if context is None else lease_duration(context.get_remaining_time_in_millis())


def _on_state_change(event: dict[str, Any], scheduler: Scheduler) -> list[str]:
    """Apply a SageMaker state change; returns the jobs whose report failed unexpectedly."""
    try:
        change = parse(event=event, model=TrainingJobStateChange)
    except ValidationError as exc:
        logger.warning("not a training job state change", extra={"error": str(exc)})
        return []
    detail = change.detail
    claimed = queue_tags(detail.Tags)
    if claimed is None:
        logger.info("training job outside the queue", extra={"training_job": detail.TrainingJobName})
        outcome = scheduler.report_outside(event["detail"])
        return outcome.job_errors
    job_name, attempt = claimed
    logger.append_keys(job=job_name)
    status = TrainingJobStatus(
        name=detail.TrainingJobName,
        status=detail.TrainingJobStatus,
        secondary_status=detail.SecondaryStatus,
        failure_reason=detail.FailureReason,
        tags=detail.Tags,
        secondary_status_transitions=tuple(detail.SecondaryStatusTransitions),
        training_time_seconds=detail.TrainingTimeInSeconds,
    )
    outcome = scheduler.report(job_name, attempt, status)
    logger.remove_keys(["job"])
    return outcome.job_errors


def _check_outside(event: dict[str, Any], outside_jobs: OutsideJobs) -> list[str]:
    """Apply the policy to a training job outside the queue; an unexpected error is logged and
    counted like one job's, and the scheduling pass still runs."""
    detail = event.get("detail")
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


def _record(report: PassReport, job_errors: list[str]) -> None:
    metrics.add_metric(name="JobsStarted", unit=MetricUnit.Count, value=len(report.started))
    metrics.add_metric(name="JobsPreempted", unit=MetricUnit.Count, value=len(report.preempted))
    metrics.add_metric(name="StartsRefused", unit=MetricUnit.Count, value=len(report.refused))
    metrics.add_metric(name="JobErrors", unit=MetricUnit.Count, value=len(job_errors))
    metrics.add_metric(name="StuckJobs", unit=MetricUnit.Count, value=report.stuck)
    now = _now()
    waits: dict[str, list[float]] = {}
    for job in report.started:
        waits.setdefault(job.pool, []).append((now - job.submitted_at).total_seconds())
    usage = {pool.pool: pool for pool in report.usage.pools} if report.usage is not None else {}
    for pool in sorted(set(waits) | set(report.pending_by_pool) | set(usage)):
        per_pool = EphemeralMetrics(namespace=NAMESPACE, service="smq")
        per_pool.add_dimension(name="pool", value=pool)
        per_pool.add_metric(name="QueueDepth", unit=MetricUnit.Count, value=report.pending_by_pool.get(pool, 0))
        for waited in waits.get(pool, ()):
            per_pool.add_metric(name="WaitTime", unit=MetricUnit.Seconds, value=waited)
        if pool in usage:
            per_pool.add_metric(name="PoolInUse", unit=MetricUnit.Count, value=usage[pool].in_use)
            capacity = usage[pool].capacity
            if capacity is not None:
                per_pool.add_metric(name="PoolCapacity", unit=MetricUnit.Count, value=capacity)
        per_pool.flush_metrics()
