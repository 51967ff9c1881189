"""Small builders for governance tests: queued jobs at a given point of their life, and SageMaker
descriptions shaped like DescribeTrainingJob answers."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.governance.idle import AlarmPrefix
from smq_lambda.governance.policy import Policy

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
ROLE = "arn:aws:iam::123456789012:role/Training"
TOPIC = "arn:aws:sns:us-east-1:123456789012:smq-idle"
PREFIX = AlarmPrefix("smq-idle-smq.")
"""The idle alarm prefix of a stack named `smq`."""


def request(**members: Any) -> dict[str, Any]:
    """A valid CreateTrainingJob request; `members` replace top-level members."""
    base: dict[str, Any] = {
        "TrainingJobName": "vit",
        "RoleArn": ROLE,
        "AlgorithmSpecification": {"TrainingImage": "123456789012.dkr.ecr.us-east-1.amazonaws.com/vit:1",
                                   "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/out/"},
        "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 50},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "Tags": [{"Key": "project", "Value": "vision"}],
    }  # fmt: skip
    base.update(copy.deepcopy(members))
    return base


def spot_request(**members: Any) -> dict[str, Any]:
    return request(
        EnableManagedSpotTraining=True,
        StoppingCondition={"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200},
        CheckpointConfig={"S3Uri": "s3://bucket/ckpt/vit/abc/", "LocalPath": "/opt/ml/checkpoints"},
        **members,
    )


def job(
    state: JobState = JobState.RUNNING,
    *,
    stored_request: Mapping[str, Any] | None = None,
    past_outcomes: Iterable[str] = (),
) -> Job:
    """A job whose current attempt is in `state`, after earlier attempts that ended with `past_outcomes`.
    PENDING gives a job whose last attempt ended (or that never started)."""
    queued = Job(name="vit", job_id="0123456789abcdef", state=JobState.PENDING, priority=0, submitted_at=NOW,
                 demand={"ml.g5.xlarge": 1}, owner="alice", request=dict(stored_request or request()))  # fmt: skip
    for outcome in past_outcomes:
        queued = lifecycle.mark_running(lifecycle.start(queued, NOW, reason="fits", nonce=NONCE), NOW)
        queued = lifecycle.requeue(queued, NOW, outcome=outcome, reason=outcome)
    if state is JobState.PENDING:
        return queued
    started = lifecycle.start(queued, NOW, reason="fits", nonce=NONCE)
    if state is JobState.STARTING:
        return started
    running = lifecycle.mark_running(started, NOW)
    if state is JobState.RUNNING:
        return running
    if state in (JobState.PREEMPTING, JobState.STOPPING):
        return lifecycle.request_stop(running, NOW, preempt=state is JobState.PREEMPTING, reason=f"{state} for test")
    return lifecycle.finish(running, state, NOW, outcome=str(state), reason=str(state))


NONCE = "0123456789ab"
"""The random part of every attempt name these builders make, so two builds of a job agree."""


def attempt_name(queued: Job) -> str:
    attempt = queued.current_attempt
    assert attempt is not None
    return attempt.training_job_name


def transitions(*statuses: str, minutes: int = 10) -> list[dict[str, Any]]:
    """A SecondaryStatusTransitions history: each status lasts `minutes`, the last is still open."""
    history = []
    for index, status in enumerate(statuses):
        entry: dict[str, Any] = {"Status": status, "StartTime": NOW + timedelta(minutes=index * minutes),
                                 "StatusMessage": f"{status} for test"}  # fmt: skip
        if index < len(statuses) - 1:
            entry["EndTime"] = NOW + timedelta(minutes=(index + 1) * minutes)
        history.append(entry)
    return history


def description(name: str, status: str = "InProgress", secondary: str = "Training", **members: Any) -> dict[str, Any]:
    """A DescribeTrainingJob answer for training job `name` (the request's members plus status)."""
    described = request(TrainingJobName=name, TrainingJobStatus=status, SecondaryStatus=secondary,
                        TrainingJobArn=f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}")  # fmt: skip
    del described["Tags"]
    described.update(copy.deepcopy(members))
    return described


def policy_document(policy: Policy) -> dict[str, Any]:
    """`policy` as the JSON document `parse_policy` reads back to an equal Policy."""
    return {
        "required_tags": list(policy.required_tags),
        "allowed_instance_types": list(policy.allowed_instance_types),
        "max_instance_count": policy.max_instance_count,
        "max_runtime_seconds": policy.max_runtime_seconds,
        "allowed_role_arns": list(policy.allowed_role_arns),
        "idle": {
            "threshold_percent": policy.idle.threshold_percent,
            "period_seconds": policy.idle.period_seconds,
            "evaluation_periods": policy.idle.evaluation_periods,
            "enforce_outside_queue": policy.idle.enforce_outside_queue,
        },
        "spot_interruption_limit": policy.spot_interruption_limit,
        "retry": {
            "max_retries": policy.retry.max_retries,
            "min_training_seconds": policy.retry.min_training_seconds,
            "retryable_reasons": list(policy.retry.retryable_reasons),
        },
    }
