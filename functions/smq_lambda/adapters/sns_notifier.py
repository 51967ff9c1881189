"""Publishes governance notifications to an SNS topic (the policy topic).

A notification reports a stop that has already been asked for; failing to publish it must not
undo or repeat the stop. So a failed Publish is logged with the whole notification (the log keeps
what the topic did not get) and reported as False, never raised.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from smq_lambda.governance.actions import NotifyPolicy

logger = Logger(service="smq", child=True)


class SnsNotifier:
    """The notifier port of service/outside_jobs.py over one topic ARN."""

    def __init__(self, topic_arn: str, client: Any) -> None:
        self._topic_arn = topic_arn
        self._client = client

    def notify(self, notification: NotifyPolicy) -> bool:
        """True when SNS accepted the message."""
        try:
            self._client.publish(TopicArn=self._topic_arn, Subject=notification.subject, Message=notification.message)
        except (ClientError, BotoCoreError) as exc:
            code = exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else type(exc).__name__
            logger.error(
                "could not publish a governance notification",
                extra={
                    "topic": self._topic_arn,
                    "code": code,
                    "error": str(exc),
                    "subject": notification.subject,
                    "notification": notification.message,
                },
            )
            return False
        return True
