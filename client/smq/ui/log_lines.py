"""The last log lines of one attempt, from CloudWatch Logs, for the ui's job page.

SageMaker writes each host's output to `/aws/sagemaker/TrainingJobs`, stream `<training job>/algo-N-...`
(smq.logs tails the same streams for `smq describe --follow`); the page shows the newest lines of
every host, merged in time order.
"""

from __future__ import annotations

from typing import Any

import botocore.exceptions

MAX_LINES = 200
MAX_STREAMS = 16


def attempt_log_lines(logs: Any, training_job_name: str, limit: int = MAX_LINES) -> list[dict[str, Any]]:
    """`[{"at": epoch ms, "host": stream suffix, "message"}]`, oldest first, at most `limit`."""
    from smq.logs import LOG_GROUP  # smq.logs imports the SageMaker SDK: only when logs are read

    try:
        streams = logs.describe_log_streams(
            logGroupName=LOG_GROUP, logStreamNamePrefix=training_job_name + "/", limit=MAX_STREAMS
        ).get("logStreams", [])
        lines: list[dict[str, Any]] = []
        for stream in streams:
            name = stream["logStreamName"]
            events = logs.get_log_events(
                logGroupName=LOG_GROUP, logStreamName=name, limit=limit, startFromHead=False
            ).get("events", [])
            host = name[len(training_job_name) + 1 :]
            lines.extend({"at": event["timestamp"], "host": host, "message": event["message"]} for event in events)
    except botocore.exceptions.ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return []
        raise
    return sorted(lines, key=lambda line: line["at"])[-limit:]
