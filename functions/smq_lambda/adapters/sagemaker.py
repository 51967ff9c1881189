"""SageMaker training jobs: create an attempt, stop it, read its status, and count the instances that
training jobs the queue did not start hold in its pools.

Every error code the queue acts on is in an explicit map below; nothing looks at message text.
Transport failures (timeouts, dropped connections) are botocore exceptions, mapped by class.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timedelta
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    ParamValidationError,
    ProxyConnectionError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError

from smq_lambda.domain.jobs.model import ATTEMPT_TAG, JOB_TAG, STACK_TAG, Job
from smq_lambda.domain.placements.placement import pinned_request
from smq_lambda.domain.sagemaker.held_instances import held_instances
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.domain.sagemaker.warm_pool_status import warm_pool_status_of
from smq_lambda.domain.warm.warm_pools import with_keep_alive
from smq_lambda.errors import StartOutcomeUnknown, StartRefused, TrainingServiceError

logger = Logger(service="smq", child=True)

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
CREATION_CLOCK_SKEW = timedelta(seconds=30)
"""How much earlier than the attempt's opening (the scheduler's clock) SageMaker's CreationTime of
the queue's own create may read; anything older was created by someone else before the attempt."""
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
NEVER_SENT: tuple[type[BotoCoreError], ...] = (EndpointConnectionError, ConnectTimeoutError, ProxyConnectionError)
"""Transport failures raised before the request left: no connection to SageMaker (or to the proxy)
was ever made. Every other transport failure (a read timeout, a connection closed or reset, a TLS
error, which urllib3 also raises while reading an answer) may come after SageMaker got the request."""
CREATE_RETRY_EVENT = "needs-retry.sagemaker.CreateTrainingJob"
"""Emitted by botocore after every attempt of a call, the retried ones included."""


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code") or "Unknown")


def error_message(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Message") or "")


def attempt_tags(job: Job, stack: str | None) -> dict[str, str]:
    """The tags the queue puts on the job's current attempt: the job, the attempt number, and the
    stack (absent when the stack has no name)."""
    attempt = job.current_attempt
    if attempt is None:
        raise ValueError(f"job {job.name!r} has no attempt to start")
    tags = {JOB_TAG: job.name, ATTEMPT_TAG: str(attempt.number)}
    if stack is not None:
        tags[STACK_TAG] = stack
    return tags


def attempt_request(job: Job, stack: str | None = None) -> dict[str, Any]:
    """The CreateTrainingJob request of the job's current attempt: the submitted request unchanged,
    except the attempt's name, the queue's tags (see `attempt_tags`), for a flexible job the
    instances pinned to the attempt's placement (domain/placements/placement.py), and the keep-alive the queue
    decided (domain/warm/warm_pools.py)."""
    attempt = job.current_attempt
    if attempt is None:
        raise ValueError(f"job {job.name!r} has no attempt to start")
    request = copy.deepcopy(dict(job.request))
    if attempt.placement is not None:
        request = pinned_request(request, attempt.placement)
    with_keep_alive(request, attempt.keep_alive_s)
    own_tags = [tag for tag in request.get("Tags") or () if not str(tag.get("Key", "")).startswith(QUEUE_TAG_PREFIX)]
    request["TrainingJobName"] = attempt.training_job_name
    request["Tags"] = [*own_tags, *({"Key": key, "Value": value} for key, value in attempt_tags(job, stack).items())]
    return request


def may_have_reached_sagemaker(exc: BaseException | None) -> bool:
    """Whether SageMaker may have received the request that failed with `exc` (see NEVER_SENT)."""
    return isinstance(exc, (HTTPClientError, BotoConnectionError)) and not isinstance(exc, NEVER_SENT)


def start_refusal(exc: ClientError | BotoCoreError) -> StartRefused:
    """What a failed CreateTrainingJob means for the job, when no attempt of the call reached SageMaker
    without an answer."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        return StartRefused(f"{code}: {error_message(exc)}", lasting=START_ERRORS.get(code, TRANSIENT))
    if isinstance(exc, ParamValidationError):
        return StartRefused(f"invalid CreateTrainingJob request: {exc}", lasting=LASTING)
    return StartRefused(f"SageMaker could not be reached: {exc}", lasting=TRANSIENT)


def service_error(operation: str, exc: ClientError | BotoCoreError) -> TrainingServiceError:
    """A failed call other than a create; a transport failure's code is its botocore class name."""
    if isinstance(exc, ClientError):
        return TrainingServiceError(operation, error_code(exc), error_message(exc))
    return TrainingServiceError(operation, type(exc).__name__, str(exc))


class SageMakerTrainingService:
    """The TrainingService port on the SageMaker API (a boto3 `sagemaker` client). `stack`: the smq
    stack's name, tagged on every attempt (`smq:stack`) so other smq stacks in the account leave it
    alone; None tags none."""

    def __init__(self, client: Any = None, *, page_size: int = MAX_PAGE_SIZE, stack: str | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("sagemaker")
        self._client = client
        self._page_size = page_size
        self._stack = stack
        self._resources: dict[str, dict[str, int]] = {}
        """Instances per type of training jobs described before whose answer was final: a job's
        ResourceConfig never changes."""
        self._create_call = threading.local()
        client.meta.events.register(CREATE_RETRY_EVENT, self._note_create_attempt, unique_id=f"smq-{id(self)}")

    def start_attempt(self, job: Job) -> None:
        """Create the current attempt; `ResourceInUse` means it already exists, which is success.

        The attempt's name, with its random part, was recorded with the attempt before the first
        create, so every retry sends the same name: if SageMaker already has a training job of this
        name, it is normally this attempt, created by an earlier call whose answer was lost (a
        timeout, a pass that died between the create and the write), and it is adopted only once
        `_confirm_own_attempt` has checked it. Retrying the create never makes a second training job.

        A call that fails after one of its attempts (botocore retries) may have reached SageMaker
        unanswered raises StartOutcomeUnknown, not a refusal: the attempt may be running.
        """
        self._create_call.maybe_created = False
        try:
            self._client.create_training_job(**attempt_request(job, self._stack))
        except ClientError as exc:
            if error_code(exc) == ALREADY_EXISTS:
                self._confirm_own_attempt(job)
                return
            raise self._start_failure(exc) from exc
        except BotoCoreError as exc:
            raise self._start_failure(exc) from exc

    def _confirm_own_attempt(self, job: Job) -> None:
        """A training job of the attempt's name exists: it is the queue's only if it was created after
        the attempt opened and carries exactly the tags the queue's create sent (job, attempt,
        stack). Attempt names are visible to users once recorded, so someone could create one first
        (after a create whose answer was lost); adopting theirs would let them run anything under
        the queue's name and capacity. Such a name is refused (transiently), and the job's next
        attempt gets a fresh name."""
        attempt = job.current_attempt
        assert attempt is not None, "start_attempt creates the current attempt"
        name = attempt.training_job_name
        try:
            existing = self._describe(name)
            if existing is None:
                raise StartOutcomeUnknown(f"a training job named {name} exists but SageMaker cannot describe it")
            tags = self._tags(existing["TrainingJobArn"])
        except TrainingServiceError as exc:
            raise StartOutcomeUnknown(f"the attempt's name exists and could not be checked: {exc}") from exc
        created = existing.get("CreationTime")
        if isinstance(created, datetime) and created < attempt.started_at - CREATION_CLOCK_SKEW:
            raise StartRefused(
                f"a training job named {name} was created at {created.isoformat()}, before "
                f"this attempt opened at {attempt.started_at.isoformat()}: not by the queue",
                lasting=False,
            )
        expected = attempt_tags(job, self._stack)
        claimed = {key: tags[key] for key in (JOB_TAG, ATTEMPT_TAG, STACK_TAG) if key in tags}
        if claimed != expected:
            raise StartRefused(
                f"a training job named {name} exists with the tags {claimed}, not the attempt's {expected}: "
                "not by the queue",
                lasting=False,
            )

    def _start_failure(self, exc: ClientError | BotoCoreError) -> StartRefused | StartOutcomeUnknown:
        if may_have_reached_sagemaker(exc) or self._create_call.maybe_created:
            return StartOutcomeUnknown(f"CreateTrainingJob may have taken effect: {type(exc).__name__}: {exc}")
        return start_refusal(exc)

    def _note_create_attempt(self, caught_exception: BaseException | None = None, **_: Any) -> None:
        """Remembers, for this thread's current create, that an attempt may have reached SageMaker
        unanswered: botocore retries it and raises only the last attempt's error, which may be one
        that was never sent (the endpoint went away after taking the first)."""
        if may_have_reached_sagemaker(caught_exception):
            self._create_call.maybe_created = True

    def stop(self, training_job_name: str) -> None:
        self._ending("StopTrainingJob", lambda: self._client.stop_training_job(TrainingJobName=training_job_name))

    def end_warm_pool(self, training_job_name: str) -> None:
        """UpdateTrainingJob answers ValidationException for a training job whose warm pool is not
        available (reused, terminated, never kept): nothing is left to end."""
        self._ending(
            "UpdateTrainingJob",
            lambda: self._client.update_training_job(
                TrainingJobName=training_job_name, ResourceConfig={"KeepAlivePeriodInSeconds": 0}
            ),
        )

    def _ending(self, operation: str, call: Callable[[], object]) -> None:
        """Make a call that ends something; an answer that nothing is left to end (STOP_DONE_ERRORS)
        is success, any other failure a TrainingServiceError."""
        try:
            call()
        except ClientError as exc:
            if error_code(exc) in STOP_DONE_ERRORS:
                return
            raise service_error(operation, exc) from exc
        except BotoCoreError as exc:
            raise service_error(operation, exc) from exc

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
            secondary_status_transitions=tuple(response.get("SecondaryStatusTransitions") or ()),
            training_time_seconds=response.get("TrainingTimeInSeconds"),
            billable_time_seconds=response.get("BillableTimeInSeconds"),
            warm_pool=warm_pool_status_of(response),
        )

    def outside_in_progress(self, queue_attempts: Collection[str]) -> dict[str, dict[str, int]]:
        """Lists busy jobs page by page (never one unpaginated call) and describes each job outside the
        queue once per container lifetime; its ResourceConfig is then remembered. What a description
        does not say in a readable way is logged with the job's name and counts nothing: a training
        job of a shape the queue does not know never stops reconciliation.
        """
        ours = set(queue_attempts)
        held: dict[str, dict[str, int]] = {}
        for name in self._busy_job_names():
            if name in ours:
                continue
            demand = self._instances_of(name)
            if demand:
                held[name] = dict(demand)
        return held

    def in_progress_since(self, created_after: datetime) -> list[dict[str, Any]]:
        """Lists page by page, then describes and reads the tags of each job (a job that vanished
        in between is left out)."""
        paginator = self._client.get_paginator("list_training_jobs")
        pages = paginator.paginate(
            StatusEquals="InProgress", CreationTimeAfter=created_after, PaginationConfig={"PageSize": self._page_size}
        )
        try:
            names = [summary["TrainingJobName"] for page in pages for summary in page["TrainingJobSummaries"]]
        except (ClientError, BotoCoreError) as exc:
            raise service_error("ListTrainingJobs", exc) from exc
        jobs = []
        for name in names:
            description = self._describe(name)
            if description is not None:
                jobs.append({**description, "Tags": self._tags(description["TrainingJobArn"])})
        return jobs

    def _tags(self, arn: str) -> dict[str, str]:
        paginator = self._client.get_paginator("list_tags")
        try:
            return {
                tag["Key"]: tag["Value"] for page in paginator.paginate(ResourceArn=arn) for tag in page.get("Tags", [])
            }
        except (ClientError, BotoCoreError) as exc:
            raise service_error("ListTags", exc) from exc

    def _busy_job_names(self) -> list[str]:
        paginator = self._client.get_paginator("list_training_jobs")
        names: list[str] = []
        try:
            for status in BUSY_STATUSES:
                pages = paginator.paginate(StatusEquals=status, PaginationConfig={"PageSize": self._page_size})
                for page in pages:
                    names.extend(summary["TrainingJobName"] for summary in page["TrainingJobSummaries"])
        except (ClientError, BotoCoreError) as exc:
            raise service_error("ListTrainingJobs", exc) from exc
        return names

    def _instances_of(self, name: str) -> dict[str, int]:
        if name in self._resources:
            return self._resources[name]
        response = self._describe(name)
        if response is None:
            return {}
        held = held_instances(response)
        if held.unreadable:
            logger.warning(
                "a training job outside the queue holds instances the queue cannot count",
                extra={"training_job": name, "unreadable": list(held.unreadable), "counted": held.counts},
            )
        if held.final:
            self._resources[name] = held.counts
        return held.counts

    def _describe(self, name: str) -> dict[str, Any] | None:
        try:
            response: dict[str, Any] = self._client.describe_training_job(TrainingJobName=name)
        except ClientError as exc:
            if error_code(exc) in NOT_FOUND_ERRORS:
                return None
            raise service_error("DescribeTrainingJob", exc) from exc
        except BotoCoreError as exc:
            raise service_error("DescribeTrainingJob", exc) from exc
        return response
