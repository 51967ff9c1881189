"""Jobs and CreateTrainingJob requests for the adapter tests."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from smq_lambda.domain.jobs.model import Job, demand_of
from smq_lambda.domain.jobs.states import JobState

G5 = "ml.g5.xlarge"
P5 = "ml.p5.48xlarge"
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"


def request(
    name: str = "train",
    *,
    pool: str = G5,
    instances: int = 1,
    groups: list[tuple[str, int]] | None = None,
    tags: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A CreateTrainingJob request botocore accepts (every required field present)."""
    resources: dict[str, Any] = {"VolumeSizeInGB": 30}
    if groups:
        resources["InstanceGroups"] = [
            {"InstanceType": kind, "InstanceCount": count, "InstanceGroupName": f"group-{index}"}
            for index, (kind, count) in enumerate(groups)
        ]
    else:
        resources.update(InstanceType=pool, InstanceCount=instances)
    return {
        "TrainingJobName": name,
        "RoleArn": ROLE,
        "AlgorithmSpecification": {
            "TrainingImage": "123.dkr.ecr.us-east-1.amazonaws.com/t:1",
            "TrainingInputMode": "File",
        },
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
        "ResourceConfig": resources,
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "HyperParameters": {"epochs": "3", "lr": "0.001"},
        "CheckpointConfig": {"S3Uri": f"s3://bucket/checkpoints/{name}/"},
        "Tags": tags if tags is not None else [{"Key": "priority", "Value": "0"}],
    }


def job(
    name: str,
    *,
    priority: int = 0,
    minute: int = 0,
    pool: str = G5,
    instances: int = 1,
    groups: list[tuple[str, int]] | None = None,
    owner: str = ALICE,
    job_id: str | None = None,
    tags: list[dict[str, str]] | None = None,
) -> Job:
    """A pending job submitted `minute` minutes after T0."""
    body = request(name, pool=pool, instances=instances, groups=groups, tags=tags)
    return Job(
        name=name,
        job_id=job_id or hashlib.sha1(f"{name}/{minute}".encode()).hexdigest()[:16],
        state=JobState.PENDING,
        priority=priority,
        submitted_at=T0 + timedelta(minutes=minute),
        demand=demand_of(body),
        owner=owner,
        request=body,
    )
