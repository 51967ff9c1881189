"""Valid CreateTrainingJob requests, callers, pools and job moves shared by the API tests."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState

TABLE = "smq-api-test"
G5 = "ml.g5.xlarge"
P5 = "ml.p5.48xlarge"
POOLS = {G5: 4, P5: 2}
ROLE = "arn:aws:iam::123456789012:role/SageMakerTrainingRole"
OTHER_ROLE = "arn:aws:iam::123456789012:role/SomeOtherRole"
ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
ADMIN = "arn:aws:iam::123456789012:role/QueueOperator"
CHECKPOINT_PREFIX = "s3://smq-test-bucket/smq-checkpoints"


def training_request(
    name: str = "vit-tiny",
    *,
    priority: int | str | None = None,
    instance_type: str = G5,
    instances: int = 1,
    **members: Any,
) -> dict[str, Any]:
    """A request the queue accepts under POOLS; keyword members replace top-level members."""
    request: dict[str, Any] = {
        "TrainingJobName": name,
        "RoleArn": ROLE,
        "AlgorithmSpecification": {
            "TrainingImage": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.3.0-gpu-py311",
            "TrainingInputMode": "File",
        },
        "OutputDataConfig": {"S3OutputPath": "s3://smq-test-bucket/output"},
        "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": instances, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "HyperParameters": {"epochs": "2"},
        "Tags": [{"Key": "team", "Value": "vision"}],
    }
    if priority is not None:
        request["Tags"].append({"Key": "priority", "Value": str(priority)})
    request.update(members)
    return request


def without(request: dict[str, Any], dotted: str) -> dict[str, Any]:
    """A copy of `request` without the member at a dotted path (`ResourceConfig.InstanceCount`)."""
    result = copy.deepcopy(request)
    *parents, last = dotted.split(".")
    target = result
    for part in parents:
        target = target[part]
    del target[last]
    return result


def replaced(request: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A copy of `request` with the member at a dotted path set to `value`."""
    result = copy.deepcopy(request)
    *parents, last = dotted.split(".")
    target = result
    for part in parents:
        target = target[part]
    target[last] = value
    return result


def instance_groups(*groups: tuple[str, int]) -> dict[str, Any]:
    """A heterogeneous ResourceConfig: one group per (instance type, count)."""
    return {
        "InstanceGroups": [
            {"InstanceType": instance_type, "InstanceCount": count, "InstanceGroupName": f"group-{index}"}
            for index, (instance_type, count) in enumerate(groups)
        ],
        "VolumeSizeInGB": 30,
    }


def run(store: Any, name: str, now: datetime) -> Job:
    """Move a pending job to running the way a scheduling pass and a SageMaker event would."""
    job = store.get(name)
    started = store.save(lifecycle.start(job, now, reason="capacity free"), expected_version=job.version)
    return store.save(lifecycle.mark_running(started, now), expected_version=started.version)


def complete(store: Any, name: str, now: datetime) -> Job:
    """Move a running job to completed, as its SageMaker completion event would."""
    job = store.get(name)
    finished = lifecycle.finish(job, JobState.COMPLETED, now, outcome="completed", reason="training finished")
    return store.save(finished, expected_version=job.version)
