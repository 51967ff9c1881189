"""`QueueTrainingJobSession`: a SageMaker SDK v2 session whose training jobs go through the queue.

    estimator = PyTorch(..., sagemaker_session=QueueTrainingJobSession(priority=5))
    estimator.fit()

How it fits into the SDK (2.x):

- `Session.train()` builds the CreateTrainingJob request and hands it to
  `_intercept_create_request(request, create, "train")`, the hook `PipelineSession` uses to capture
  requests. Here the request goes to `POST /add-job` instead of `create_training_job`.
- The estimator then knows the job by its request's `TrainingJobName`: the *queue* name. Every
  SageMaker job the queue starts for it is an attempt with its own name. So `describe_training_job`,
  `wait_for_job`, `logs_for_job` and `stop_training_job` map a queue name to the queue's view:
  the current attempt as SageMaker describes it, with the status the queue gives the whole job
  (a preempted job is `InProgress`, not `Stopped`), or a synthesized description while no attempt
  exists. The SDK also calls `sagemaker_client.describe_training_job` directly (`model_data`), so
  the session's `sagemaker_client` routes queue names the same way.
- Waiting (`fit()`, `wait_for_job`, `logs_for_job(wait=True)`) follows the queue job through its
  attempts, streaming each attempt's CloudWatch logs, and ends as the SDK does: it returns on
  completion and raises `UnexpectedStatusException` when the job fails or is cancelled.

Nothing leaves the machine that the caller did not point somewhere: SDK telemetry is opted out of
(a queued `fit()` is not a SageMaker call, and offline stacks must stay offline), and the default
bucket's account lookup uses the session's STS client, which honours `AWS_ENDPOINT_URL_STS`,
instead of the SDK's fixed regional endpoint.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import botocore.exceptions
from sagemaker import exceptions
from sagemaker.logs import ColorWrap
from sagemaker.session import Session
from sagemaker.utils import secondary_training_status_changed, secondary_training_status_message

from smq.api_client import SmqApiClient
from smq.errors import JobNotFound
from smq.jobs import (
    TERMINAL_STATES,
    check_priority,
    current_attempt,
    last_training_job_name,
    now_utc,
    parse_time,
    queued_message,
    with_priority,
)
from smq.logs import AttemptLogs, logs_client

log = logging.getLogger(__name__)

_NOT_FOUND_CODES = frozenset({"ValidationException", "ResourceNotFound", "ResourceNotFoundException"})
"""What DescribeTrainingJob says about a name SageMaker does not know (yet)."""

_QUEUE_STATUS: dict[str, tuple[str, str | None]] = {
    "pending": ("InProgress", "Pending"),
    "starting": ("InProgress", "Starting"),
    "running": ("InProgress", None),
    "preempting": ("InProgress", "Interrupted"),
    "stopping": ("Stopping", "Stopping"),
    "completed": ("Completed", None),
    "failed": ("Failed", "Failed"),
    "cancelled": ("Stopped", "Stopped"),
}
"""DescribeTrainingJob status of a queue job per queue state; a None secondary status keeps
SageMaker's (Downloading, Training, Uploading...)."""

_NOT_DESCRIBED = frozenset({"TrainingJobName", "Tags"})
"""Request members DescribeTrainingJob does not echo back."""


class QueueTrainingJobSession(Session):
    """A `sagemaker.session.Session` that queues training jobs in smq instead of starting them.

    Args:
        api_url: the smq API; else `SMQ_API_URL`; else the `ApiUrl` output of `stack_name` or
            `SMQ_STACK_NAME`.
        stack_name: the smq CloudFormation stack to read the API URL from.
        priority: the default priority of jobs submitted with this session; an estimator's own
            `priority` tag wins. None leaves the queue's default (0).
        poll_interval: seconds between looks at the queue while waiting.
        telemetry_opt_out: opt this session out of the SDK's usage telemetry (a request to a
            public endpoint on every `fit()`); on by default so offline stacks stay offline. The
            SDK validates a non-empty config on every lookup: a few seconds per estimator.
        api_client: an `SmqApiClient` to use instead of building one.
        sleep: how to wait between looks at the queue (tests move the queue on from it).
        **session_kwargs: passed to `sagemaker.session.Session` (`boto_session`,
            `default_bucket`, `sagemaker_client`, `sagemaker_config`...).
    """

    def __init__(
        self,
        *,
        api_url: str | None = None,
        stack_name: str | None = None,
        priority: int | None = None,
        poll_interval: float = 5.0,
        telemetry_opt_out: bool = True,
        api_client: SmqApiClient | None = None,
        sleep: Callable[[float], None] = time.sleep,
        **session_kwargs: Any,
    ) -> None:
        self.priority = None if priority is None else check_priority(priority)
        super().__init__(**session_kwargs)
        self.api = api_client or SmqApiClient(api_url, stack_name=stack_name, boto_session=self.boto_session)
        self.poll_interval = poll_interval
        self._sleep = sleep
        self._requests: dict[str, dict[str, Any]] = {}
        """Requests this session queued, by queue name: describe echoes them while nothing runs."""
        self._queue_names: set[str] = set()
        self._other_names: set[str] = set()
        self._sagemaker = self.sagemaker_client
        self.sagemaker_client = QueueRoutingSageMakerClient(self._sagemaker, self)
        if telemetry_opt_out:
            self.sagemaker_config = _with_telemetry_opt_out(self.sagemaker_config)

    # ------------------------------------------------------------------ submitting

    def _intercept_create_request(self, request: dict[str, Any], create: Any, func_name: str | None = None) -> Any:
        """`Session.train()` ends here with the finished request: queue it instead of creating it."""
        if func_name != "train":
            return super()._intercept_create_request(request, create, func_name or "")
        return self.queue_training_job(request)

    def queue_training_job(self, request: Mapping[str, Any], priority: int | None = None) -> dict[str, Any]:
        """Send a CreateTrainingJob request to the queue; returns the queued job.

        `priority` replaces any priority tag; without it the request's own tag is kept, else the
        session's default is added.
        """
        if priority is not None:
            queued = with_priority(request, priority, replace=True)
        else:
            queued = with_priority(request, self.priority, replace=False)
        job = self.api.add_job(queued)
        name = str(job["name"])
        self._requests[name] = queued
        self._queue_names.add(name)
        self._other_names.discard(name)
        log.info("%s", queued_message(job, queued))
        return job

    # ------------------------------------------------------------------ what the SDK asks about a job

    def is_queue_job(self, name: str) -> bool:
        """Whether `name` is a job of the queue (asked once per name; SageMaker names are not)."""
        if name in self._queue_names:
            return True
        if name in self._other_names:
            return False
        try:
            self.api.get_job(name)
        except JobNotFound:
            self._other_names.add(name)
            return False
        self._queue_names.add(name)
        return True

    def describe_training_job(self, job_name: str) -> dict[str, Any]:
        if self.is_queue_job(job_name):
            return self.describe_queue_job(job_name)
        return self._sagemaker.describe_training_job(TrainingJobName=job_name)

    def describe_queue_job(self, name: str, job: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A DescribeTrainingJob answer for a queue job: its latest attempt as SageMaker knows it,
        or one built from the request while no attempt exists, with the queue's status on top."""
        job = job if job is not None else self.api.get_job(name)
        attempt_name = last_training_job_name(job)
        description = self._describe_attempt(attempt_name) if attempt_name else None
        if description is None:
            description = self._synthesize(job)
        return _with_queue_status(description, job)

    def wait_for_job(self, job: str, poll: int = 5) -> dict[str, Any]:
        if self.is_queue_job(job):
            return self.follow(job, logs=False)
        return super().wait_for_job(job, poll)

    def logs_for_job(
        self, job_name: str, wait: bool = False, poll: int = 10, log_type: str = "All", timeout: int | None = None
    ) -> Any:
        if not self.is_queue_job(job_name):
            return super().logs_for_job(job_name, wait=wait, poll=poll, log_type=log_type, timeout=timeout)
        if wait:
            return self.follow(job_name, logs=log_type in ("All", "Training"), timeout=timeout)
        self._print_all_logs(self.api.get_job(job_name))
        return self.describe_queue_job(job_name)

    def stop_training_job(self, job_name: str) -> None:
        """Stopping a queue job cancels it through the queue (which stops a running attempt)."""
        if self.is_queue_job(job_name):
            self.api.cancel_job(job_name)
            return
        super().stop_training_job(job_name)

    # ------------------------------------------------------------------ offline facts

    def account_id(self) -> str:
        """The caller's account through the session's own STS client.

        The SDK pins STS to `https://sts.<region>.amazonaws.com`, which ignores
        `AWS_ENDPOINT_URL_STS`; the session's client resolves the same regional endpoint unless
        the environment points it elsewhere (the local stack).
        """
        sts = self.boto_session.client("sts", region_name=self.boto_region_name)
        return str(sts.get_caller_identity()["Account"])

    def default_bucket(self) -> str:
        """The SDK's default bucket (`sagemaker-<region>-<account>`), its account found with
        `account_id()` rather than the SDK's fixed STS endpoint."""
        if not self._default_bucket and not self._default_bucket_name_override:
            self._default_bucket_name_override = f"sagemaker-{self.boto_region_name}-{self.account_id()}"
            self._default_bucket_set_by_sdk = True
        return str(super().default_bucket())

    # ------------------------------------------------------------------ following a job

    def follow(self, name: str, *, logs: bool = True, timeout: float | None = None) -> dict[str, Any]:
        """Block until the queue job finishes, reporting as it goes; the SDK's error if it did not
        complete. Returns the last description (the job's when `timeout` ran out first)."""
        deadline = time.monotonic() + timeout if timeout else None
        follower = _Follower(self, name, logs=logs)
        while True:
            job = self.api.get_job(name)
            if job["state"] in TERMINAL_STATES:
                break
            follower.report(job)
            if deadline is not None and time.monotonic() > deadline:
                print(f"Timeout Exceeded. {timeout} seconds elapsed.")
                return self.describe_queue_job(name, job)
            self._sleep(self.poll_interval)
        if logs:
            self._sleep(self.poll_interval)  # CloudWatch gets the last lines a little after the end
        follower.report(job, final=True)
        description = self.describe_queue_job(name, job)
        _print_billing(self._attempt_descriptions(job), job)
        check_finished(name, job, description)
        return description

    # ------------------------------------------------------------------ internals

    def _describe_attempt(self, training_job_name: str) -> dict[str, Any] | None:
        """The attempt as SageMaker describes it; None while the queue is still creating it."""
        try:
            return dict(self._sagemaker.describe_training_job(TrainingJobName=training_job_name))
        except botocore.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _NOT_FOUND_CODES:
                return None
            raise

    def _attempt_descriptions(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        found = (self._describe_attempt(a["training_job_name"]) for a in job.get("attempts") or ())
        return [description for description in found if description is not None]

    def _synthesize(self, job: Mapping[str, Any]) -> dict[str, Any]:
        name = str(job["name"])
        request = self._requests.get(name) or {}
        description: dict[str, Any] = {k: copy.deepcopy(v) for k, v in request.items() if k not in _NOT_DESCRIBED}
        description.setdefault("ResourceConfig", _resource_config(job))
        account = _account_of(request.get("RoleArn")) or _account_of(job.get("owner")) or "000000000000"
        partition = self.boto_session.get_partition_for_region(self.boto_region_name)
        description.update(
            TrainingJobName=name,
            TrainingJobArn=f"arn:{partition}:sagemaker:{self.boto_region_name}:{account}:training-job/{name.lower()}",
            CreationTime=parse_time(job.get("submitted_at")),
            LastModifiedTime=parse_time(job.get("updated_at")) or parse_time(job.get("submitted_at")),
            SecondaryStatusTransitions=[],
        )
        return description

    def _print_all_logs(self, job: Mapping[str, Any]) -> None:
        _Follower(self, str(job["name"]), logs=True).flush_logs(job)


class _Follower:
    """One wait on one queue job: remembers what it reported, so each change is said once."""

    def __init__(self, session: QueueTrainingJobSession, name: str, *, logs: bool) -> None:
        self._session = session
        self._name = name
        self._previous: Mapping[str, Any] | None = None
        self._descriptions: dict[str, dict[str, Any]] = {}
        self._tails: dict[str, AttemptLogs] = {}
        self._done: set[str] = set()
        self._ended_once: set[str] = set()
        self._color = ColorWrap()
        self._logs_client = logs_client(session.boto_session) if logs else None

    def report(self, job: Mapping[str, Any], *, final: bool = False) -> None:
        """Say what happened since the last look, in the order it happened: the new log lines of
        attempts already known, the queue's changes, SageMaker's status of the live attempt, then
        the first lines of attempts that just started. `final`: the job has finished."""
        known = {str(a["training_job_name"]) for a in (self._previous or {}).get("attempts") or ()}
        self.flush_logs(job, only=known)
        for line in queue_changes(self._previous, job):
            print(f"{now_utc():%Y-%m-%d %H:%M:%S} Queue - {line}", flush=True)
        self._previous = job
        if not final:
            self._report_attempt_status(job)
        self.flush_logs(job)
        self._retire_read_attempts(job, final=final)

    def _report_attempt_status(self, job: Mapping[str, Any]) -> None:
        """SageMaker's own secondary status messages for the live attempt, as the SDK prints them."""
        attempt = current_attempt(job)
        if attempt is None or attempt.get("ended_at"):
            return
        training_job_name = str(attempt["training_job_name"])
        description = self._session._describe_attempt(training_job_name)
        if description is None:
            return
        previous = self._descriptions.get(training_job_name)
        if secondary_training_status_changed(description, previous):
            print(secondary_training_status_message(description, previous), flush=True)
            self._descriptions[training_job_name] = description

    def flush_logs(self, job: Mapping[str, Any], only: set[str] | None = None) -> None:
        """Print the new log lines of every attempt still read (or those named in `only`), oldest
        attempt first."""
        if self._logs_client is None:
            return
        instances = sum((job.get("demand") or {}).values()) or int(job.get("instances") or 1)
        for attempt in job.get("attempts") or ():
            training_job_name = str(attempt["training_job_name"])
            if training_job_name in self._done or (only is not None and training_job_name not in only):
                continue
            tail = self._tails.get(training_job_name)
            if tail is None:
                tail = self._tails[training_job_name] = AttemptLogs(
                    self._logs_client, training_job_name, instances, self._color
                )
            tail.flush()

    def _retire_read_attempts(self, job: Mapping[str, Any], *, final: bool) -> None:
        """Stop reading an attempt one look after it ended: CloudWatch delivers the last lines a
        little after SageMaker reports the end."""
        for attempt in job.get("attempts") or ():
            training_job_name = str(attempt["training_job_name"])
            if final or training_job_name in self._ended_once:
                self._done.add(training_job_name)
            elif attempt.get("ended_at"):
                self._ended_once.add(training_job_name)


def queue_changes(previous: Mapping[str, Any] | None, job: Mapping[str, Any]) -> list[str]:
    """What changed in the queue job since the last look, in words (nothing when nothing did).

    Attempts are reported even when a look falls between two states (a job seen pending and then
    running still gets its "starting attempt" line).
    """
    name, state = job["name"], job["state"]
    attempts = list(job.get("attempts") or ())
    attempt = attempts[-1] if attempts else None
    number = attempt["number"] if attempt else None
    reason = f": {job['reason']}" if job.get("reason") else ""
    lines: list[str] = []
    if previous is not None:
        before = {a["number"]: a for a in previous.get("attempts") or ()}
        for each in attempts:
            old = before.get(each["number"])
            if old is None:
                lines.append(
                    f"starting attempt {each['number']} of {name} as SageMaker training job {each['training_job_name']}"
                )
            elif old.get("ended_at") is None and each.get("ended_at") and state not in TERMINAL_STATES:
                why = f" ({each['reason']})" if each.get("reason") else ""
                lines.append(f"attempt {each['number']} of {name} ended: {each.get('outcome')}{why}")
        if previous["state"] == state:
            moved = (previous.get("position"), previous.get("reason")) != (job.get("position"), job.get("reason"))
            if state == "pending" and moved:
                lines.append(f"{name} is at position {job.get('position')} in {job['pool']}{reason}")
            return lines
    if state == "pending":
        again = "back in the queue" if previous is not None and attempts else "pending"
        lines.append(f"{name} is {again} at position {job.get('position')} in {job['pool']}{reason}")
    elif state == "starting" and previous is None:
        lines.append(f"starting attempt {number} of {name} as SageMaker training job {job.get('training_job_name')}")
    elif state == "running":
        lines.append(f"attempt {number} of {name} is running as {job.get('training_job_name')}")
    elif state == "preempting":
        lines.append(f"attempt {number} of {name} is being preempted{reason}")
    elif state == "stopping":
        lines.append(f"{name} is being cancelled: stopping attempt {number}{reason}")
    elif state in TERMINAL_STATES:
        redundant = str(job.get("reason") or "").lower() == state
        lines.append(f"{name} {state}{'' if redundant else reason}")
    return lines


def check_finished(name: str, job: Mapping[str, Any], description: Mapping[str, Any]) -> None:
    """Raise what the SDK raises for a training job that did not complete."""
    state = job["state"]
    if state == "completed":
        return
    status = "Failed" if state == "failed" else "Stopped"
    reason = job.get("reason") or description.get("FailureReason") or "(No reason provided)"
    if state == "cancelled":
        reason = f"cancelled in the queue: {reason}"
    message = f"Error for Training job {name}: {status}. Reason: {reason}"
    error = exceptions.CapacityError if "CapacityError" in str(reason) else exceptions.UnexpectedStatusException
    raise error(message=message, allowed_statuses=["Completed"], actual_status=status)


def _with_queue_status(description: dict[str, Any], job: Mapping[str, Any]) -> dict[str, Any]:
    """Put the queue job's status on a description, recording the override as a transition."""
    status, secondary = _QUEUE_STATUS[job["state"]]
    result = dict(description)
    if secondary is None:
        if result.get("TrainingJobStatus") == status:
            return result
        secondary = "Completed" if status == "Completed" else "Training"
    if result.get("TrainingJobStatus") == status and result.get("SecondaryStatus") == secondary:
        return result
    when = parse_time(job.get("updated_at")) or now_utc()
    message = _status_message(job)
    result.update(TrainingJobStatus=status, SecondaryStatus=secondary)
    result["SecondaryStatusTransitions"] = [
        *(result.get("SecondaryStatusTransitions") or ()),
        {"Status": secondary, "StartTime": when, "StatusMessage": message},
    ]
    if status == "Failed":
        result["FailureReason"] = job.get("reason") or result.get("FailureReason") or message
    return result


def _status_message(job: Mapping[str, Any]) -> str:
    reason = job.get("reason")
    state = job["state"]
    if state == "pending":
        waiting = f"Waiting in the smq queue: position {job.get('position')} in {job.get('pool')}"
        return f"{waiting} ({reason})" if reason else waiting
    if state == "starting":
        attempt = current_attempt(job)
        return f"Starting attempt {attempt['number'] if attempt else 1} through the smq queue"
    if state == "preempting":
        return f"Preempted by the smq queue: {reason}" if reason else "Preempted by the smq queue"
    if state == "cancelled":
        return f"Cancelled in the smq queue: {reason}" if reason else "Cancelled in the smq queue"
    return reason or f"The smq queue job is {state}"


def _print_billing(descriptions: list[dict[str, Any]], job: Mapping[str, Any]) -> None:
    """The SDK's closing lines, summed over every attempt the job needed."""
    training = [d["TrainingTimeInSeconds"] for d in descriptions if d.get("TrainingTimeInSeconds") is not None]
    billable = [d["BillableTimeInSeconds"] for d in descriptions if d.get("BillableTimeInSeconds") is not None]
    instances = int(job.get("instances") or 1)
    if training:
        print("Training seconds:", sum(training) * instances)
    if billable:
        print("Billable seconds:", sum(billable) * instances)
    if len(job.get("attempts") or ()) > 1:
        print(f"Attempts: {len(job['attempts'])}")


def _resource_config(job: Mapping[str, Any]) -> dict[str, Any]:
    demand: Mapping[str, int] = job.get("demand") or {job["pool"]: job["instances"]}
    if len(demand) == 1:
        ((instance_type, count),) = demand.items()
        return {"InstanceType": instance_type, "InstanceCount": count}
    return {
        "InstanceGroups": [{"InstanceType": t, "InstanceCount": c, "InstanceGroupName": t} for t, c in demand.items()]
    }


def _account_of(arn: Any) -> str | None:
    parts = arn.split(":") if isinstance(arn, str) else []
    return parts[4] if len(parts) > 5 and parts[4].isdigit() else None


def _with_telemetry_opt_out(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The SDK's `SageMaker.PythonSDK.Modules.TelemetryOptOut` setting, on a copy of the config."""
    result = copy.deepcopy(dict(config or {}))
    result.setdefault("SchemaVersion", "1.0")
    modules = result.setdefault("SageMaker", {}).setdefault("PythonSDK", {}).setdefault("Modules", {})
    modules["TelemetryOptOut"] = True
    return result


class QueueRoutingSageMakerClient:
    """The boto3 SageMaker client, except that queue names are answered through the queue.

    The SDK calls `sagemaker_client.describe_training_job` itself in places (the estimator's
    `model_data`), so routing only in the session would leave those asking SageMaker about a name
    it never heard of. Everything else goes to the real client untouched.
    """

    def __init__(self, client: Any, session: QueueTrainingJobSession) -> None:
        self._client = client
        self._session = session

    def describe_training_job(self, **kwargs: Any) -> Any:
        name = kwargs.get("TrainingJobName")
        if isinstance(name, str) and self._session.is_queue_job(name):
            return self._session.describe_queue_job(name)
        return self._client.describe_training_job(**kwargs)

    def stop_training_job(self, **kwargs: Any) -> Any:
        name = kwargs.get("TrainingJobName")
        if isinstance(name, str) and self._session.is_queue_job(name):
            return self._session.api.cancel_job(name)
        return self._client.stop_training_job(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
