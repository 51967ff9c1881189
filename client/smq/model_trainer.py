"""SageMaker Python SDK v3: a `ModelTrainer`'s job through the queue.

    queue = TrainingQueue()
    queue.train(model_trainer, input_data_config=[...], priority=5)   # instead of model_trainer.train(...)
    queue.submit(model_trainer, inputs=[...], priority=5)              # or queue it, as AWS Batch's queue does

Why the queue takes the trainer rather than a session taking the job: `ModelTrainer.train()` creates
the job and waits on it through sagemaker-core's `TrainingJob`, with the boto3 session alone, so no
SageMaker `Session` method sees the request or the wait (v2's `Session.train()` handed both to the
session, which `QueueTrainingJobSession` takes over). AWS Batch's `TrainingQueue.submit` for v3
builds the request the same way as here: `_create_training_job_args(..., boto3=True)`, exactly
what `train()` sends to CreateTrainingJob.

Following is `train()`'s wait: through every attempt of the queue job (`smq.follow`), then
`model_trainer._latest_training_job` is the last attempt's `TrainingJob`, as after `train()`, and
a failed job raises `FailedStatusError` as `TrainingJob.wait` does (a cancelled one, like a
stopped training job, does not).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    from sagemaker.core.resources import TrainingJob
    from sagemaker.core.utils.code_injection.codec import transform
    from sagemaker.core.utils.exceptions import FailedStatusError
    from sagemaker.train.model_trainer import Mode, ModelTrainer
except ImportError as exc:  # no SDK, or v2
    raise ImportError(
        "queueing a ModelTrainer needs the SageMaker Python SDK v3 (pip install 'smq-sagemaker[sdk3]'); "
        "with SDK v2, use QueueTrainingJobSession with estimator.fit()"
    ) from exc

from smq.api_client import SmqApiClient
from smq.follow import JobFollower, attempt_descriptions, billing_lines, describe_attempt
from smq.logs import logs_client


def model_trainer_request(
    model_trainer: ModelTrainer, inputs: Sequence[Any] | None = None, job_name: str | None = None
) -> dict[str, Any]:
    """The CreateTrainingJob request `model_trainer.train(input_data_config=inputs)` would send
    (source code and local inputs are uploaded first); `job_name` renames the job."""
    if model_trainer.training_mode != Mode.SAGEMAKER_TRAINING_JOB:
        raise ValueError(
            "the queue runs SageMaker training jobs: use Mode.SAGEMAKER_TRAINING_JOB, not a local container"
        )
    try:
        request = dict(model_trainer._create_training_job_args(input_data_config=inputs, boto3=True))
    finally:
        _clean_up_code_copy(model_trainer)
    if job_name is not None:
        request["TrainingJobName"] = job_name
    return request


def follow_training(
    api: SmqApiClient,
    model_trainer: ModelTrainer,
    name: str,
    *,
    logs: bool = True,
    poll_interval: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """`train()`'s wait for the queue job `name`: report until it ends, attach its last attempt to
    the trainer, raise if it failed. Returns the finished queue job."""
    session = model_trainer.sagemaker_session

    def describe(training_job_name: str) -> dict[str, Any] | None:
        return describe_attempt(session.sagemaker_client, training_job_name)

    tails = logs_client(session.boto_session) if logs else None
    job, _ = JobFollower(api, name, describe, tails, poll_interval=poll_interval, sleep=sleep).follow()
    descriptions = attempt_descriptions(describe, job)
    for line in billing_lines(descriptions, job):
        print(line)
    if descriptions:
        model_trainer._latest_training_job = _training_job(descriptions[-1], session)
    _raise_if_failed(job, descriptions)
    return job


def _training_job(description: Mapping[str, Any], session: Any) -> TrainingJob:
    """The `TrainingJob` resource `TrainingJob.get` would build from this description, bound to the
    trainer's session so that `refresh()` and `wait()` work on it."""
    training_job = TrainingJob(**transform(dict(description), "DescribeTrainingJobResponse"))
    training_job._set_client_context(session=session.boto_session, region=session.boto_region_name)
    return training_job


def _raise_if_failed(job: Mapping[str, Any], descriptions: Sequence[Mapping[str, Any]]) -> None:
    """What `TrainingJob.wait` raises for a failed job; the queue's reason comes first, as it also
    covers failures SageMaker never saw (a start the queue could not make)."""
    if job["state"] != "failed":
        return
    last = descriptions[-1] if descriptions else {}
    reason = job.get("reason") or last.get("FailureReason") or "(No reason provided)"
    raise FailedStatusError(resource_type="TrainingJob", status="Failed", reason=reason)


def _clean_up_code_copy(model_trainer: ModelTrainer) -> None:
    """Remove the temporary copy of the SDK's drivers and the source code, as `train()` does once
    the request is sent (it is uploaded by then)."""
    copy = model_trainer._temp_code_dir
    if copy is not None:
        copy.cleanup()
