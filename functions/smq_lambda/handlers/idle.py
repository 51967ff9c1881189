"""Idle-stop Lambda: subscribed to the idle SNS topic, where the idle-GPU alarms publish.

Each SNS record's message is CloudWatch's alarm notification; one that is not about one of this
stack's idle alarms (SMQ_IDLE_ALARM_PREFIX) is logged and ignored. A notification that cannot be
acted on now (CloudWatch, DynamoDB or, for a job outside the queue, SageMaker failing) fails the
invocation once every record was tried, so Lambda delivers it again: an alarm notifies only when
its state changes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.parser import ValidationError, parse
from aws_lambda_powertools.utilities.parser.models import SnsModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from smq_lambda.adapters.cloudwatch_alarms import CloudWatchIdleAlarms
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.sagemaker import SageMakerTrainingService
from smq_lambda.governance.idle import parse_notification
from smq_lambda.handlers.scheduler import default_policy, idle_alarm_prefix
from smq_lambda.service.idle_stop import IdleStop
from smq_lambda.settings import Settings

logger = Logger(service="smq")
tracer = Tracer(service="smq")


def _now() -> datetime:
    return datetime.now(UTC)


@cache
def default_idle_stop() -> IdleStop:
    """Built once per cold start from the environment the template sets."""
    settings = Settings.from_env()
    prefix = idle_alarm_prefix(settings)
    return IdleStop(
        store=DynamoJobStore(settings.table_name, boto3.client("dynamodb"), ttl_days=settings.finished_ttl_days),
        training=SageMakerTrainingService(boto3.client("sagemaker")),
        alarms=CloudWatchIdleAlarms(boto3.client("cloudwatch"), prefix),
        policy=default_policy(),
        clock=_now,
        prefix=prefix,
    )


@tracer.capture_lambda_handler
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, default_idle_stop())


def handle(event: dict[str, Any], idle_stop: IdleStop) -> dict[str, Any]:
    """Act on every record; returns what was stopped and deleted (useful in logs and tests)."""
    try:
        records = parse(event=event, model=SnsModel).Records
    except ValidationError as exc:
        logger.warning("not an SNS event", extra={"error": str(exc)})
        return {"stopped": [], "deleted": [], "ignored": 1}
    stopped: list[str] = []
    deleted: list[str] = []
    ignored = 0
    failure: Exception | None = None
    for record in records:
        notification = parse_notification(idle_stop.prefix, record.Sns.Message)
        if notification is None:
            logger.info(
                "not a notification of this stack's idle alarms",
                extra={"message_id": record.Sns.MessageId, "alarm_prefix": idle_stop.prefix.value},
            )
            ignored += 1
            continue
        try:
            outcome = idle_stop.handle(notification)
        except Exception as exc:
            logger.exception("could not act on an idle alarm", extra={"alarm": notification.alarm.name})
            failure = failure or exc
            continue
        if outcome.stopped is not None:
            stopped.append(outcome.stopped.training_job_name)
        deleted += outcome.deleted
    if failure is not None:
        raise failure
    return {"stopped": stopped, "deleted": deleted, "ignored": ignored}
