"""The calls moto implements: create, describe, and listings across pages."""

from __future__ import annotations

from typing import Any

import boto3
from moto.core import DEFAULT_ACCOUNT_ID
from moto.sagemaker.models import sagemaker_backends
from smq_lambda.adapters.sagemaker import SageMakerTrainingService

from tests.adapters.builders import G5, P5, request
from tests.adapters.sagemaker.support import STACK, started


def test_on_moto_an_attempt_is_created_tagged_and_described(sagemaker_client: Any) -> None:
    service = SageMakerTrainingService(sagemaker_client, stack=STACK)
    current = started("moto-created")
    name = current.attempts[0].training_job_name

    service.start_attempt(current)
    service.start_attempt(current)
    status = service.describe(name)
    arn = sagemaker_client.describe_training_job(TrainingJobName=name)["TrainingJobArn"]
    tags = sagemaker_client.list_tags(ResourceArn=arn)["Tags"]

    assert status is not None and status.name == name
    assert {"Key": "smq:job", "Value": "moto-created"} in tags
    assert {"Key": "smq:attempt", "Value": "1"} in tags
    assert {"Key": "smq:stack", "Value": STACK} in tags
    assert service.describe("moto-never-created") is None


def test_on_moto_outside_in_progress_crosses_pages() -> None:
    """Seven busy jobs, listed two per page, in a region no other test uses."""
    region = "eu-west-3"
    client = boto3.client("sagemaker", region_name=region)
    jobs = {f"busy-{index}": (G5 if index % 2 else P5, index + 1) for index in range(7)}
    for name, (kind, count) in jobs.items():
        client.create_training_job(**request(name, pool=kind, instances=count))
    client.create_training_job(**request("finished", pool=G5, instances=50))
    backend = sagemaker_backends[DEFAULT_ACCOUNT_ID][region]
    for name in jobs:
        backend.training_jobs[name].training_job_status = "InProgress"
    ours = ["busy-0", "busy-3"]

    outside = SageMakerTrainingService(client, page_size=2).outside_in_progress(ours)

    assert outside == {name: {kind: count} for name, (kind, count) in jobs.items() if name not in ours}
