"""Asks the scheduler function for a pass: an asynchronous Lambda invoke (InvocationType Event)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

logger = Logger(service="smq", child=True)

TRIGGER_SOURCE = "smq.api"
"""The `source` of the payload, so the scheduler handler can tell a kick from other events."""


class LambdaSchedulerTrigger:
    """The SchedulerTrigger port. A failed kick is logged, not raised: the API call that asked for it
    has already been written, and the scheduler's 5-minute schedule runs the pass it would have."""

    def __init__(self, function_name: str, client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("lambda")
        self._function_name = function_name
        self._client = client

    def kick(self, reason: str) -> None:
        payload = json.dumps({"source": TRIGGER_SOURCE, "reason": reason}).encode()
        try:
            self._client.invoke(FunctionName=self._function_name, InvocationType="Event", Payload=payload)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("could not ask for a scheduling pass", extra={"reason": reason, "error": str(exc)})
