"""What the SageMaker adapter tests share: a job with its first attempt open, the stack name, and
DescribeTrainingJob answers."""

from __future__ import annotations

from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job

from tests.adapters.builders import G5, T0, job

STACK = "production"


def started(name: str = "train", **kwargs: Any) -> Job:
    """A job whose first attempt the scheduler has just opened."""
    return lifecycle.start(job(name, **kwargs), T0, reason="fits")


NO_RESOURCE_CONFIG: Any = object()
"""`training_job_description(..., ResourceConfig=NO_RESOURCE_CONFIG)`: an answer without ResourceConfig."""


def training_job_description(name: str, status: str = "InProgress", **extra: Any) -> dict[str, Any]:
    resources = extra.pop("ResourceConfig", {"InstanceType": G5, "InstanceCount": 1, "VolumeSizeInGB": 30})
    description = {
        "TrainingJobName": name,
        "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{DEFAULT_ACCOUNT_ID}:training-job/{name}",
        "TrainingJobStatus": status,
        "SecondaryStatus": extra.pop("SecondaryStatus", "Training"),
        "AlgorithmSpecification": {"TrainingInputMode": "File"},
        "ResourceConfig": resources,
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "CreationTime": T0,
        "ModelArtifacts": {"S3ModelArtifacts": "s3://bucket/model.tar.gz"},
        **extra,
    }
    if resources is NO_RESOURCE_CONFIG:
        del description["ResourceConfig"]
    return description
