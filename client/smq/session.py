"""`QueueTrainingJobSession`: a SageMaker Python SDK v2 session whose training jobs go through the queue.

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
  exists (`smq.describe`). The SDK also calls `sagemaker_client.describe_training_job` directly
  (`model_data`), so the session's `sagemaker_client` routes queue names the same way.
- Waiting (`fit()`, `wait_for_job`, `logs_for_job(wait=True)`) follows the queue job through its
  attempts (`smq.follow`), streaming each attempt's CloudWatch logs, and ends as the SDK does: it
  returns on completion and raises `UnexpectedStatusException` when the job fails or is cancelled.

Nothing leaves the machine that the caller did not point somewhere: SDK telemetry is opted out of
(a queued `fit()` is not a SageMaker call, and offline stacks must stay offline), and the default
bucket's account lookup uses the session's STS client, which honours `AWS_ENDPOINT_URL_STS`,
instead of the SDK's fixed regional endpoint.

SDK v3 has no `Session.train()` to take over (`ModelTrainer.train()` creates and waits through
sagemaker-core's `TrainingJob`): v3 users queue with `TrainingQueue.train(model_trainer)`
(`smq.model_trainer`). Importing this module with v3 installed says so.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

try:
    from sagemaker import exceptions
    from sagemaker.session import Session
except ImportError as exc:  # no SDK, or v3 (which has neither)
    raise ImportError(
        "QueueTrainingJobSession needs the SageMaker Python SDK v2 (pip install 'smq-sagemaker[sdk2]'); "
        "with SDK v3, queue a ModelTrainer with smq.TrainingQueue().train(model_trainer)"
    ) from exc

from smq.api_client import SmqApiClient
from smq.describe import synthesized_description, with_queue_status
from smq.errors import JobNotFound
from smq.follow import JobFollower, attempt_descriptions, billing_lines, describe_attempt
from smq.jobs import check_priority, last_training_job_name, queued_message, with_priority
from smq.logs import logs_client

log = logging.getLogger(__name__)


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

    def _intercept_create_request(self, request: dict[str, Any], create: Any, func_name: str = "") -> Any:
        """`Session.train()` ends here with the finished request: queue it instead of creating it."""
        if func_name != "train":
            return super()._intercept_create_request(request, create, func_name)
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
        return with_queue_status(description, job)

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
        self._follower(job_name, logs=True).flush_logs(self.api.get_job(job_name))
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
        job, finished = self._follower(name, logs=logs).follow(timeout)
        if not finished:
            print(f"Timeout Exceeded. {timeout} seconds elapsed.")
            return self.describe_queue_job(name, job)
        description = self.describe_queue_job(name, job)
        for line in billing_lines(attempt_descriptions(self._describe_attempt, job), job):
            print(line)
        check_finished(name, job, description)
        return description

    # ------------------------------------------------------------------ internals

    def _follower(self, name: str, *, logs: bool) -> JobFollower:
        return JobFollower(
            self.api,
            name,
            self._describe_attempt,
            logs_client(self.boto_session) if logs else None,
            poll_interval=self.poll_interval,
            sleep=self._sleep,
        )

    def _describe_attempt(self, training_job_name: str) -> dict[str, Any] | None:
        return describe_attempt(self._sagemaker, training_job_name)

    def _synthesize(self, job: Mapping[str, Any]) -> dict[str, Any]:
        return synthesized_description(
            job,
            self._requests.get(str(job["name"])),
            partition=self.boto_session.get_partition_for_region(self.boto_region_name),
            region=self.boto_region_name,
        )


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
