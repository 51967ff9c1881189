"""Tailing one attempt's CloudWatch logs the way the SageMaker SDK tails a training job's.

The SDK looks for streams named after the job it created; a queued job's logs are under each
attempt's own SageMaker name, so smq tails `/aws/sagemaker/TrainingJobs`, prefix
`<attempt name>/`, with the SDK's own stream merging (`multi_stream_iter`) and per-host colours,
from whichever SDK major is installed (`smq.sdk_helpers`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import botocore.config
import botocore.exceptions

from smq.sdk_helpers import ColorWrap, Position, multi_stream_iter

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
STANDARD_ENDPOINT_ENV = "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS"
SHORT_ENDPOINT_ENV = "AWS_ENDPOINT_URL_LOGS"


def logs_client(boto_session: Any, env: Mapping[str, str] | None = None) -> Any:
    """A CloudWatch Logs client that retries patiently, as the SDK's log tailing does.

    boto3 finds a custom endpoint in `AWS_ENDPOINT_URL_CLOUDWATCH_LOGS` (the service id is
    "CloudWatch Logs"); smq's local stack also names it `AWS_ENDPOINT_URL_LOGS`, honoured when the
    standard variable is absent.
    """
    env = os.environ if env is None else env
    endpoint = None if env.get(STANDARD_ENDPOINT_ENV) else env.get(SHORT_ENDPOINT_ENV) or None
    config = botocore.config.Config(retries={"max_attempts": 15})
    return boto_session.client("logs", endpoint_url=endpoint, config=config)


class AttemptLogs:
    """The log streams of one attempt, printed once each, in timestamp order across hosts."""

    def __init__(self, logs_client: Any, training_job_name: str, instance_count: int, color: ColorWrap) -> None:
        self._client = logs_client
        self.training_job_name = training_job_name
        self._instance_count = max(instance_count, 1)
        self._color = color
        self._streams: list[str] = []
        self._positions: dict[str, Position] = {}

    def flush(self) -> int:
        """Print every event that arrived since the last flush; returns how many."""
        if len(self._streams) < self._instance_count:
            self._find_streams()
        printed = 0
        if not self._streams:
            return printed
        for index, event in multi_stream_iter(self._client, LOG_GROUP, self._streams, self._positions):
            self._color(index, event["message"])
            stream = self._streams[index]
            timestamp, skip = self._positions[stream]
            if event["timestamp"] == timestamp:
                self._positions[stream] = Position(timestamp=timestamp, skip=skip + 1)
            else:
                self._positions[stream] = Position(timestamp=event["timestamp"], skip=1)
            printed += 1
        return printed

    def _find_streams(self) -> None:
        """Streams appear when each host first writes, so look again until every host has one."""
        request: dict[str, Any] = {
            "logGroupName": LOG_GROUP,
            "logStreamNamePrefix": self.training_job_name + "/",
            "orderBy": "LogStreamName",
        }
        names: list[str] = []
        try:
            while True:
                page = self._client.describe_log_streams(**request)
                names.extend(stream["logStreamName"] for stream in page.get("logStreams") or ())
                if not page.get("nextToken"):
                    break
                request["nextToken"] = page["nextToken"]
        except botocore.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
            return
        for name in names:
            if name not in self._positions:
                self._streams.append(name)
                self._positions[name] = Position(timestamp=0, skip=0)
