"""SageMaker training jobs: create an attempt, stop it, read its status, and count the instances that
training jobs the queue did not start hold in its pools.

Every error code the queue acts on is in an explicit map below; nothing looks at message text.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from smq_lambda.domain.model import ATTEMPT_TAG, JOB_TAG, Job, demand_of
from smq_lambda.errors import StartRefused, TrainingServiceError
from smq_lambda.ports import TrainingJobStatus

QUEUE_TAG_PREFIX = "smq:"
"""Tags the queue owns. A request's own tags under this prefix are dropped so they cannot lie about
which job and attempt a training job belongs to."""

LASTING = True
TRANSIENT = False
START_ERRORS: Mapping[str, bool] = {
    # The request itself is wrong, or names something that does not exist or may not be used:
    # retrying the same request can only fail the same way, so the job fails with the reason.
    "ValidationException": LASTING,
    "ResourceNotFound": LASTING,
    "AccessDeniedException": LASTING,
    "AccessDenied": LASTING,
    # Account limits, capacity, throttling and outages pass: the job stays pending with backoff.
    "ResourceLimitExceeded": TRANSIENT,
    "CapacityError": TRANSIENT,
    "InsufficientCapacityError": TRANSIENT,
    "ThrottlingException": TRANSIENT,
    "Throttling": TRANSIENT,
    "RequestLimitExceeded": TRANSIENT,
    "TooManyRequestsException": TRANSIENT,
    "ConflictException": TRANSIENT,
    "InternalFailure": TRANSIENT,
    "InternalServerError": TRANSIENT,
    "ServiceUnavailable": TRANSIENT,
    "ExpiredTokenException": TRANSIENT,
}
"""CreateTrainingJob error code → lasting? A code not listed is transient: an unknown failure is
retried with the lifecycle's bounded backoff rather than failing a job that may be fine."""

ALREADY_EXISTS = "ResourceInUse"
STOP_DONE_ERRORS = frozenset({"ValidationException", "ResourceNotFound"})
"""StopTrainingJob answers ValidationException for a job that is already stopping, stopped, completed
or failed, and ResourceNotFound (or ValidationException) for a name it does not know: either way
there is nothing left to stop."""
NOT_FOUND_ERRORS = frozenset({"ResourceNotFound", "ValidationException"})
"""DescribeTrainingJob documents ResourceNotFound but answers an unknown name with
ValidationException "Requested resource not found" (aws/aws-sdk#165). Its only input is the name, so
a ValidationException can only mean the name is not one of an existing job."""
BUSY_STATUSES = ("InProgress", "Stopping")
"""Statuses in which a training job holds its instances."""
MAX_PAGE_SIZE = 100


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code") or "Unknown")


def error_message(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Message") or "")


def attempt_request(job: Job) -> dict[str, Any]:
    """The CreateTrainingJob request of the job's current attempt: the submitted request unchanged,
    except the attempt's name and the queue's tags."""
    attempt = job.current_attempt
    if attempt is None:
        raise ValueError(f"job {job.name!r} has no attempt to start")
    request = copy.deepcopy(dict(job.request))
    own_tags = [tag for tag in request.get("Tags") or () if not str(tag.get("Key", "")).startswith(QUEUE_TAG_PREFIX)]
    request["TrainingJobName"] = attempt.training_job_name
    request["Tags"] = [
        *own_tags,
        {"Key": JOB_TAG, "Value": job.name},
        {"Key": ATTEMPT_TAG, "Value": str(attempt.number)},
    ]
    return request


def start_refusal(exc: ClientError | BotoCoreError) -> StartRefused:
    """What a failed CreateTrainingJob means for the job."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        return StartRefused(f"{code}: {error_message(exc)}", lasting=START_ERRORS.get(code, TRANSIENT))
    if isinstance(exc, ParamValidationError):
        return StartRefused(f"invalid CreateTrainingJob request: {exc}", lasting=LASTING)
    return StartRefused(f"SageMaker could not be reached: {exc}", lasting=TRANSIENT)


class SageMakerTrainingService:
    """The TrainingService port on the SageMaker API (a boto3 `sagemaker` client)."""

    def __init__(self, client: Any = None, *, page_size: int = MAX_PAGE_SIZE) -> None:
        if client is None:
            import boto3

            client = boto3.client("sagemaker")
        self._client = client
        self._page_size = page_size
        self._resources: dict[str, dict[str, int]] = {}
        """Instances per type of training jobs seen before: a job's ResourceConfig never changes."""

    def start_attempt(self, job: Job) -> None:
        """Create the current attempt; `ResourceInUse` means it already exists, which is success.

        The attempt name embeds the job's random id and the attempt number, so no other job and no
        other attempt can own it: if SageMaker already has a training job of this name, it is this
        attempt, created by an earlier call whose answer was lost (a timeout, a pass that died
        between the create and the write). Retrying the create is therefore always safe and never
        makes a second training job.
        """
        try:
            self._client.create_training_job(**attempt_request(job))
        except ClientError as exc:
            if error_code(exc) == ALREADY_EXISTS:
                return
            raise start_refusal(exc) from exc
        except BotoCoreError as exc:
            raise start_refusal(exc) from exc

    def stop(self, training_job_name: str) -> None:
        try:
            self._client.stop_training_job(TrainingJobName=training_job_name)
        except ClientError as exc:
            if error_code(exc) in STOP_DONE_ERRORS:
                return
            raise TrainingServiceError("StopTrainingJob", error_code(exc), error_message(exc)) from exc

    def describe(self, training_job_name: str) -> TrainingJobStatus | None:
        """The job's status (DescribeTrainingJob has no tags: callers know the job already)."""
        response = self._describe(training_job_name)
        if response is None:
            return None
        return TrainingJobStatus(
            name=response["TrainingJobName"],
            status=response["TrainingJobStatus"],
            secondary_status=response.get("SecondaryStatus"),
            failure_reason=response.get("FailureReason"),
            end_time=response.get("TrainingEndTime"),
        )

    def external_usage(self, pools: Collection[str], queue_attempts: Collection[str]) -> dict[str, int]:
        """Instances per pool held by busy training jobs that are not queue attempts.

        Lists busy jobs page by page (never one unpaginated call) and describes each job outside the
        queue once per container lifetime; its ResourceConfig is then remembered.
        """
        pooled = set(pools)
        ours = set(queue_attempts)
        usage: dict[str, int] = {}
        for name in self._busy_job_names():
            if name in ours:
                continue
            for instance_type, count in self._instances_of(name).items():
                if instance_type in pooled:
                    usage[instance_type] = usage.get(instance_type, 0) + count
        return usage

    def _busy_job_names(self) -> list[str]:
        paginator = self._client.get_paginator("list_training_jobs")
        names: list[str] = []
        try:
            for status in BUSY_STATUSES:
                pages = paginator.paginate(StatusEquals=status, PaginationConfig={"PageSize": self._page_size})
                for page in pages:
                    names.extend(summary["TrainingJobName"] for summary in page["TrainingJobSummaries"])
        except ClientError as exc:
            raise TrainingServiceError("ListTrainingJobs", error_code(exc), error_message(exc)) from exc
        return names

    def _instances_of(self, name: str) -> dict[str, int]:
        if name not in self._resources:
            response = self._describe(name)
            if response is None:
                return {}
        return self._resources[name]

    def _describe(self, name: str) -> dict[str, Any] | None:
        try:
            response: dict[str, Any] = self._client.describe_training_job(TrainingJobName=name)
        except ClientError as exc:
            if error_code(exc) in NOT_FOUND_ERRORS:
                return None
            raise TrainingServiceError("DescribeTrainingJob", error_code(exc), error_message(exc)) from exc
        self._resources[name] = demand_of(response)
        return response
