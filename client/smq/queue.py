"""`TrainingQueue`: the queue as a Python API, shaped like the SageMaker SDK's AWS Batch
`sagemaker.aws_batch.training_queue.TrainingQueue` so code can move between the two.

    queue = TrainingQueue()
    job = queue.submit(estimator, priority=5, inputs="s3://bucket/train")
    job.wait()

`submit` takes a CreateTrainingJob request dict, an SDK v2 estimator (the request `fit()` would
build) or an SDK v3 `ModelTrainer` (the request `train()` would send). `train` is SDK v3's
`model_trainer.train()` through the queue: it submits and follows the job as `train()` does.
Neither SDK is imported until one of its objects is given.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import boto3

from smq.api_client import SmqApiClient
from smq.jobs import TERMINAL_STATES, with_priority


class QueuedJob:
    """A job in the queue. Attributes show the job as of the last call that read or changed it;
    `describe()` reads it again."""

    def __init__(self, api: SmqApiClient, job: Mapping[str, Any]) -> None:
        self._api = api
        self._job: dict[str, Any] = dict(job)

    def __repr__(self) -> str:
        return f"QueuedJob(name={self.name!r}, state={self.state!r}, priority={self.priority})"

    @property
    def name(self) -> str:
        return str(self._job["name"])

    @property
    def state(self) -> str:
        return str(self._job["state"])

    @property
    def priority(self) -> int:
        return int(self._job["priority"])

    @property
    def pool(self) -> str:
        return str(self._job["pool"])

    @property
    def team(self) -> str | None:
        """The value of the job's team tag; None without one."""
        return self._job.get("team")

    @property
    def position(self) -> int | None:
        """1-based place among the pending jobs of its pool; None unless pending."""
        return self._job.get("position")

    @property
    def reason(self) -> str | None:
        return self._job.get("reason")

    @property
    def training_job_name(self) -> str | None:
        """The SageMaker name of the latest attempt, live or ended; None before the first start."""
        return self._job.get("training_job_name")

    @property
    def attempts(self) -> list[dict[str, Any]]:
        """Every SageMaker training job started for this job, oldest first."""
        return [dict(attempt) for attempt in self._job.get("attempts") or ()]

    @property
    def done(self) -> bool:
        return self.state in TERMINAL_STATES

    def describe(self) -> dict[str, Any]:
        """The job as the API has it now (the `Job` shape of openapi.yaml)."""
        self._job = self._api.get_job(self.name)
        return dict(self._job)

    def cancel(self) -> None:
        """Cancel: at once if pending; a running attempt is stopped first (state `stopping`)."""
        self._job = self._api.cancel_job(self.name)

    def update_priority(self, priority: int) -> None:
        """Move the job in the queue; a raise may preempt lower-priority jobs of its pool."""
        self._job = self._api.update_priority(self.name, priority)

    def wait(self, timeout: float | None = None, poll: float = 5.0) -> dict[str, Any]:
        """Block until the job finishes or `timeout` seconds pass; returns the last description
        (check `state`: like AWS Batch's `TrainingQueuedJob.wait`, a timeout is not an error)."""
        deadline = time.monotonic() + timeout if timeout is not None else None
        description = self.describe()
        while not self.done:
            if deadline is not None and time.monotonic() >= deadline:
                break
            pause = poll if deadline is None else min(poll, max(deadline - time.monotonic(), 0.0))
            time.sleep(pause)
            description = self.describe()
        return description


class TrainingQueue:
    """The smq queue of one stack.

    Args:
        api_url: the smq API; else `SMQ_API_URL`; else the `ApiUrl` output of `stack_name` or
            `SMQ_STACK_NAME`.
        stack_name: the smq CloudFormation stack.
        session: whose credentials and region sign the calls: a `boto3.Session` or a SageMaker
            `Session` (its `boto_session` is used). Default: the default boto3 session.
        api_client: an `SmqApiClient` to use instead of building one.
        sleep: how `train` waits between looks at the queue (tests move the queue on from it).
    """

    def __init__(
        self,
        api_url: str | None = None,
        stack_name: str | None = None,
        session: Any = None,
        *,
        api_client: SmqApiClient | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        boto_session = getattr(session, "boto_session", session) or boto3.Session()
        self.api = api_client or SmqApiClient(api_url, stack_name=stack_name, boto_session=boto_session)
        self._sleep = sleep

    def submit(
        self,
        request_or_estimator: Any,
        priority: int | None = None,
        inputs: Any = None,
        job_name: str | None = None,
        experiment_config: Mapping[str, str] | None = None,
    ) -> QueuedJob:
        """Queue a training job; `priority` replaces any `priority` tag the request has.

        An estimator's request is the one `fit(inputs, job_name=...)` would send, a ModelTrainer's
        the one `train(input_data_config=inputs)` would send (source code is uploaded first); a
        dict is a CreateTrainingJob request. `job_name` renames the job.
        """
        if isinstance(request_or_estimator, Mapping):
            if inputs is not None or experiment_config is not None:
                raise TypeError("inputs and experiment_config apply to an estimator, not to a request dict")
            request = dict(request_or_estimator)
            if job_name is not None:
                request["TrainingJobName"] = job_name
        else:
            request = training_request(request_or_estimator, inputs, job_name, experiment_config)
        queued = with_priority(request, priority, replace=True)
        return QueuedJob(self.api, self.api.add_job(queued))

    def train(
        self,
        model_trainer: Any,
        input_data_config: Sequence[Any] | None = None,
        wait: bool = True,
        logs: bool = True,
        *,
        priority: int | None = None,
        job_name: str | None = None,
        poll: float = 5.0,
    ) -> QueuedJob:
        """`model_trainer.train(input_data_config, wait, logs)` through the queue (SDK v3).

        Waiting follows the job through the queue and every attempt (preempted, resumed), printing
        the queue's changes, each attempt's status and, with `logs`, its CloudWatch logs; then
        `model_trainer._latest_training_job` is the last attempt, and a failed job raises the
        SDK's `FailedStatusError`, as after `train()`. Returns the queued job.
        """
        job = self.submit(model_trainer, priority=priority, inputs=input_data_config, job_name=job_name)
        if not wait:
            return job
        from smq.model_trainer import follow_training

        finished = follow_training(self.api, model_trainer, job.name, logs=logs, poll_interval=poll, sleep=self._sleep)
        return QueuedJob(self.api, finished)

    def list_jobs(
        self,
        state: str | Sequence[str] | None = None,
        pool: str | None = None,
        owner: str | None = None,
    ) -> list[QueuedJob]:
        """Jobs in scheduling order. `state`: None for the active states, `"all"`, one state or a
        list of states; `pool` an instance type; `owner` a principal ARN."""
        return [QueuedJob(self.api, job) for job in self.api.iter_jobs(state, pool=pool, owner=owner)]

    def get_job(self, name: str) -> QueuedJob:
        """The job of that name; `smq.errors.JobNotFound` if there is none."""
        return QueuedJob(self.api, self.api.get_job(name))

    def pools(self) -> list[dict[str, Any]]:
        """Capacity, instances in use and pending jobs of every pool."""
        return self.api.list_pools()

    def quotas(self) -> dict[str, Any]:
        """Each team's quota, use, borrowing, lending and pending jobs per pool, as GET /quotas
        answers: `{"teams": [...], "team_tag": ..., "measured_at": ...}` (`teams` is empty when
        no quota is configured)."""
        return self.api.get_quotas()

    def costs(self, by: str = "team", since: str | None = None) -> dict[str, Any]:
        """What jobs spent per group, as GET /costs answers: `by` team, owner or `tag:<key>` (a
        configured cost tag); `since` `30d` or a UTC date such as `2026-11-01` (default: this UTC
        month). Dollar figures are None where nothing could be priced, never 0."""
        return self.api.get_costs(by, since)


def training_request(
    trainer: Any, inputs: Any = None, job_name: str | None = None, experiment_config: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The CreateTrainingJob request an SDK v2 estimator's `fit(inputs, job_name=job_name)` or an
    SDK v3 ModelTrainer's `train(input_data_config=inputs)` would send."""
    if _instance_of(trainer, "sagemaker.train.model_trainer", "ModelTrainer"):
        if experiment_config is not None:
            raise TypeError("experiment_config applies to an SDK v2 estimator, not to a ModelTrainer")
        from smq.model_trainer import model_trainer_request

        return model_trainer_request(trainer, inputs, job_name)
    if _instance_of(trainer, "sagemaker.estimator", "EstimatorBase"):
        return _estimator_request(trainer, inputs, job_name, experiment_config)
    raise TypeError(
        "submit takes a SageMaker ModelTrainer (SDK v3), a SageMaker estimator (SDK v2) or a request dict, "
        f"not {type(trainer).__name__}"
    )


def _estimator_request(
    estimator: Any, inputs: Any, job_name: str | None, experiment_config: Mapping[str, str] | None
) -> dict[str, Any]:
    """The same steps as the SDK's AWS Batch queue: prepare (name the job, upload the source), build
    the train arguments, and let the estimator's session turn them into the request."""
    from sagemaker.estimator import _TrainingJob

    estimator.prepare_workflow_for_training(job_name)
    arguments = _TrainingJob.get_train_args(estimator, inputs, dict(experiment_config or {}))
    return dict(estimator.sagemaker_session.get_train_request(**arguments))


def _instance_of(value: Any, module: str, name: str) -> bool:
    """Whether `value` is an instance of `module.name`, asked without importing any SDK: an
    instance can only exist once its class's module is loaded."""
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(value, cls)
