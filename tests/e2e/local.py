"""Requests, waits and configuration changes shared by the end-to-end tests on the local stack."""

from __future__ import annotations

import io
import json
import tarfile
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions
from smq_lambda.adapters import ssm_document

POOL = "ml.m5.xlarge"
ROLE = "arn:aws:iam::000000000000:role/SageMakerRole"


def base_request(name: str, *, priority: int, hyperparameters: Mapping[str, str], instances: int = 1) -> dict[str, Any]:
    return {
        "TrainingJobName": name,
        "RoleArn": ROLE,
        "AlgorithmSpecification": {"TrainingImage": "smq-local/python:3.11", "TrainingInputMode": "File"},
        "HyperParameters": dict(hyperparameters),
        "OutputDataConfig": {"S3OutputPath": "s3://smq-local/output"},
        "ResourceConfig": {"InstanceType": POOL, "InstanceCount": instances, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "Tags": [{"Key": "priority", "Value": str(priority)}, {"Key": "team", "Value": "e2e"}],
    }


def synthetic_request(
    name: str, *, priority: int = 0, duration: float = 2, outcome: str = "complete"
) -> dict[str, Any]:
    """A job of the synthetic executor; values JSON-encoded the way the SageMaker SDK sends them."""
    hyperparameters = {
        "smq_synthetic_duration": json.dumps(str(duration)),
        "smq_synthetic_outcome": json.dumps(outcome),
    }
    return base_request(name, priority=priority, hyperparameters=hyperparameters)


def upload_source(stack: LocalStack, directory: Path, key: str) -> str:
    """Pack `directory` as the SDK's sourcedir.tar.gz into the local S3; returns its URI."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                archive.add(path, arcname=str(path.relative_to(directory)))
    stack.boto3_client("s3").put_object(Bucket=stack.bucket, Key=key, Body=buffer.getvalue())
    return f"s3://{stack.bucket}/{key}"


def process_request(
    name: str, *, priority: int, source_uri: str, program: str, hyperparameters: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    encoded = {key: json.dumps(value) for key, value in (hyperparameters or {}).items()}
    encoded["sagemaker_program"] = json.dumps(program)
    encoded["sagemaker_submit_directory"] = json.dumps(source_uri)
    return base_request(name, priority=priority, hyperparameters=encoded)


def wait_for(client: SmqApiClient, name: str, states: Collection[str], timeout: float = 60) -> dict[str, Any]:
    """Poll the API until the job is in one of `states`; fail with its last view otherwise."""
    deadline = time.monotonic() + timeout
    job = client.get_job(name)
    while job["state"] not in states:
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} still {job['state']} after {timeout} s: {job}")
        time.sleep(0.2)
        job = client.get_job(name)
    return job


@contextmanager
def rereading_stack(options: LocalStackOptions) -> Iterator[LocalStack]:
    """A stack whose functions re-read the configuration document every second instead of every
    30 s, so a test that changes it (`write_config`) sees the change at once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ssm_document, "MAX_AGE_SECONDS", 1)
        with LocalStack(options) as running:
            yield running


def write_config(stack: LocalStack, document: Mapping[str, Any]) -> None:
    """Replace the stack's configuration document in SSM, as an operator would."""
    ssm = stack.boto3_client("ssm")
    names = [parameter["Name"] for parameter in ssm.describe_parameters()["Parameters"]]
    (parameter,) = [name for name in names if name.endswith("/capacity-pools")]
    ssm.put_parameter(Name=parameter, Value=json.dumps(document), Type="String", Overwrite=True)
