"""The two AWS services a waiting `fit()` reads besides the queue, for session tests.

`FakeSageMakerClient` answers DescribeTrainingJob from the world's fake training service in the
boto3 shape; `TrainingLogs` writes an attempt's log lines to CloudWatch Logs (moto) where SageMaker
writes them.
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime
from typing import Any

import botocore.exceptions
from smq.logs import LOG_GROUP

from tests.support.fakes import FakeTrainingService

TRAINING_SECONDS = 60


class FakeSageMakerClient:
    """DescribeTrainingJob over `FakeTrainingService`, with the secondary status history SageMaker
    keeps; any other call is a test failure (the session must not make it)."""

    def __init__(self, training: FakeTrainingService) -> None:
        self._training = training
        self._transitions: dict[str, list[dict[str, Any]]] = {}
        self.described: list[str] = []

    def describe_training_job(self, *, TrainingJobName: str) -> dict[str, Any]:  # boto3's name
        self.described.append(TrainingJobName)
        job = self._training.jobs.get(TrainingJobName)
        if job is None:
            raise botocore.exceptions.ClientError(
                {"Error": {"Code": "ValidationException", "Message": "Requested resource not found."}},
                "DescribeTrainingJob",
            )
        transitions = self._transitions.setdefault(TrainingJobName, [])
        secondary = job.secondary_status or "Starting"
        if not transitions or transitions[-1]["Status"] != secondary:
            transitions.append(
                {"Status": secondary, "StartTime": datetime.now(UTC), "StatusMessage": f"{secondary} (fake)"}
            )
        description = {key: value for key, value in job.request.items() if key != "Tags"}
        output = job.request["OutputDataConfig"]["S3OutputPath"].rstrip("/")
        description.update(
            TrainingJobName=job.name,
            TrainingJobArn=f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{job.name.lower()}",
            TrainingJobStatus=job.status,
            SecondaryStatus=secondary,
            SecondaryStatusTransitions=[dict(transition) for transition in transitions],
            CreationTime=datetime(2024, 1, 1, tzinfo=UTC),
            LastModifiedTime=datetime.now(UTC),
            ModelArtifacts={"S3ModelArtifacts": f"{output}/{job.name}/output/model.tar.gz"},
        )
        if job.failure_reason:
            description["FailureReason"] = job.failure_reason
        if job.status in ("Completed", "Failed", "Stopped"):
            description.update(TrainingTimeInSeconds=TRAINING_SECONDS, BillableTimeInSeconds=TRAINING_SECONDS)
        return description

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the session called SageMaker {name}, which it must not")


class TrainingLogs:
    """Writes log lines into an attempt's stream, as the training container's stdout would."""

    def __init__(self, logs_client: Any) -> None:
        self._client = logs_client
        with contextlib.suppress(self._client.exceptions.ResourceAlreadyExistsException):
            self._client.create_log_group(logGroupName=LOG_GROUP)

    def write(self, training_job_name: str, *lines: str, host: str = "algo-1") -> None:
        stream = f"{training_job_name}/{host}-1700000000"
        with contextlib.suppress(self._client.exceptions.ResourceAlreadyExistsException):
            self._client.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        now = int(time.time() * 1000)
        self._client.put_log_events(
            logGroupName=LOG_GROUP,
            logStreamName=stream,
            logEvents=[{"timestamp": now + index, "message": line} for index, line in enumerate(lines)],
        )
