"""Publishes notices to the notifications SNS topic (the template's PolicyTopic), with the message
attributes a subscriber's filter policy matches on (`owner`, `team`, `job`, `action`).

A notice reports a change that has already been written (a stop asked for, a job re-queued);
failing to publish it must not undo or repeat that change. So a failed Publish is logged with the
whole notice (the log keeps what the topic did not get) and reported as False, never raised.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from smq_lambda.governance.notices import Notice

logger = Logger(service="smq", child=True)


class SnsNotifier:
    """The Notifier port over one topic ARN."""

    def __init__(self, topic_arn: str, client: Any) -> None:
        self._topic_arn = topic_arn
        self._client = client

    def publish(self, notice: Notice) -> bool:
        """True when SNS accepted the message."""
        attributes = {key: {"DataType": "String", "StringValue": value} for key, value in notice.attributes().items()}
        try:
            self._client.publish(
                TopicArn=self._topic_arn, Subject=notice.subject, Message=notice.message, MessageAttributes=attributes
            )
        except (ClientError, BotoCoreError) as exc:
            code = exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else type(exc).__name__
            logger.error(
                "could not publish a notification",
                extra={
                    "topic": self._topic_arn,
                    "code": code,
                    "error": str(exc),
                    "job": notice.job,
                    "action": str(notice.action),
                    "attributes": dict(notice.attributes()),
                    "subject": notice.subject,
                    "notification": notice.message,
                },
            )
            return False
        logger.info("notification published", extra={"job": notice.job, "action": str(notice.action)})
        return True
