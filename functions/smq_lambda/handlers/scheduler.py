"""Scheduler Lambda: SageMaker state changes, the reconciliation schedule, and kicks from the API.

Every invocation ends with a scheduling pass, because every trigger may have freed or claimed
capacity. Events are parsed with powertools; anything unrecognised still gets a pass, never an error.
"""

from __future__ import annotations

from datetime import UTC, datetime
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

from smq_lambda.adapters.dynamodb_lease import DynamoPassLease
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.sagemaker import SageMakerTrainingService
from smq_lambda.adapters.ssm_config import SsmConfigSource
from smq_lambda.domain.model import ATTEMPT_TAG, JOB_TAG
from smq_lambda.ports import TrainingJobStatus
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
    )


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, default_scheduler())


def handle(event: dict[str, Any], scheduler: Scheduler) -> dict[str, Any]:
    """Route one invocation, then schedule. Returns a summary (useful in logs and tests)."""
    source = event.get("source") if isinstance(event, dict) else None
    if source == SAGEMAKER_SOURCE:
        _on_state_change(event, scheduler)
    elif source == SCHEDULE_SOURCE:
        repaired = scheduler.reconcile()
        metrics.add_metric(name="JobsRepaired", unit=MetricUnit.Count, value=repaired)
    else:
        logger.info("scheduling pass requested", extra={"source": source})
    report = scheduler.schedule()
    _record(report)
    return {
        "passes": report.passes,
        "started": [job.name for job in report.started],
        "preempted": report.preempted,
        "refused": report.refused,
        "busy": report.skipped_busy,
    }


def _on_state_change(event: dict[str, Any], scheduler: Scheduler) -> None:
    try:
        change = parse(event=event, model=TrainingJobStateChange)
    except ValidationError as exc:
        logger.warning("not a training job state change", extra={"error": str(exc)})
        return
    detail = change.detail
    job_name = detail.Tags.get(JOB_TAG)
    attempt = detail.Tags.get(ATTEMPT_TAG, "")
    if job_name is None or not attempt.isdigit():
        logger.info("training job outside the queue", extra={"training_job": detail.TrainingJobName})
        return
    logger.append_keys(job=job_name)
    status = TrainingJobStatus(
        name=detail.TrainingJobName,
        status=detail.TrainingJobStatus,
        secondary_status=detail.SecondaryStatus,
        failure_reason=detail.FailureReason,
        tags=detail.Tags,
    )
    scheduler.report(job_name, int(attempt), status)
    logger.remove_keys(["job"])


def _record(report: PassReport) -> None:
    metrics.add_metric(name="JobsStarted", unit=MetricUnit.Count, value=len(report.started))
    metrics.add_metric(name="JobsPreempted", unit=MetricUnit.Count, value=len(report.preempted))
    metrics.add_metric(name="StartsRefused", unit=MetricUnit.Count, value=len(report.refused))
    now = _now()
    waits: dict[str, list[float]] = {}
    for job in report.started:
        waits.setdefault(job.pool, []).append((now - job.submitted_at).total_seconds())
    for pool in sorted(set(waits) | set(report.pending_by_pool)):
        per_pool = EphemeralMetrics(namespace=NAMESPACE, service="smq")
        per_pool.add_dimension(name="pool", value=pool)
        per_pool.add_metric(name="QueueDepth", unit=MetricUnit.Count, value=report.pending_by_pool.get(pool, 0))
        for waited in waits.get(pool, ()):
            per_pool.add_metric(name="WaitTime", unit=MetricUnit.Seconds, value=waited)
        per_pool.flush_metrics()
