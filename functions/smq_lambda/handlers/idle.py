"""Idle-stop Lambda: subscribed to the idle SNS topic, where the idle-GPU alarms publish.

Each SNS record's message is CloudWatch's alarm notification; one that is not about one of this
stack's idle alarms (SMQ_IDLE_ALARM_PREFIX) is logged and ignored. A notification that cannot be
acted on now (CloudWatch, DynamoDB or, for a job outside the queue, SageMaker failing) fails the
invocation once every record was tried, so Lambda delivers it again: an alarm notifies only when
its state changes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from smq_lambda.governance.idle_notifications import parse_notification
from smq_lambda.handlers.composition import default_idle_stop
from smq_lambda.handlers.tracing import traced

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from smq_lambda.service.idle_stop import IdleStop

logger = Logger(service="smq")


def _now() -> datetime:
    return datetime.now(UTC)


@traced
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, default_idle_stop())


def handle(event: dict[str, Any], idle_stop: IdleStop) -> dict[str, Any]:
    """Act on every record; returns what was stopped and deleted (useful in logs and tests)."""
    messages = _sns_messages(event)
    if messages is None:
        logger.warning("not an SNS event", extra={"event_keys": sorted(event) if isinstance(event, dict) else None})
        return {"stopped": [], "deleted": [], "ignored": 1}
    stopped: list[str] = []
    deleted: list[str] = []
    ignored = 0
    failure: Exception | None = None
    for message_id, message in messages:
        notification = parse_notification(idle_stop.prefix, message)
        if notification is None:
            logger.info(
                "not a notification of this stack's idle alarms",
                extra={"message_id": message_id, "alarm_prefix": idle_stop.prefix.value},
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


def _sns_messages(event: object) -> list[tuple[str, str]] | None:
    """(MessageId, Message) of every record of the SNS event Lambda gives a subscribed function;
    None when `event` is not one. Read by hand: the powertools parser's models would add pydantic
    to every cold start for two strings."""
    records = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(records, list):
        return None
    messages = []
    for record in records:
        sns = record.get("Sns") if isinstance(record, dict) else None
        if (
            not isinstance(sns, dict)
            or not isinstance(sns.get("Message"), str)
            or not isinstance(sns.get("MessageId"), str)
        ):
            return None
        messages.append((sns["MessageId"], sns["Message"]))
    return messages
