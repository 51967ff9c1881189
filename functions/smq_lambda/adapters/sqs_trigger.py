"""Asks the scheduler for a pass: one small message on the scheduler queue, which the scheduler
consumes in batches (one pass per batch, however many kicks and state changes it holds)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

logger = Logger(service="smq", child=True)

TRIGGER_SOURCE = "smq.api"
"""The `source` of the message body, so the scheduler can tell a kick from a state change."""


def kick_body(reason: str) -> str:
    return json.dumps({"source": TRIGGER_SOURCE, "reason": reason})


class SqsSchedulerTrigger:
    """The SchedulerTrigger port. A failed kick is logged, not raised: the API call that asked for it
    has already been written, and the scheduler's 5-minute schedule runs the pass it would have."""

    def __init__(self, queue_url: str, client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("sqs")
        self._queue_url = queue_url
        self._client = client

    def kick(self, reason: str) -> None:
        try:
            self._client.send_message(QueueUrl=self._queue_url, MessageBody=kick_body(reason))
        except (ClientError, BotoCoreError) as exc:
            logger.warning("could not ask for a scheduling pass", extra={"reason": reason, "error": str(exc)})
