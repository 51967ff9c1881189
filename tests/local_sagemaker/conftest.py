"""Fixtures: moto in server mode for S3/Logs/CloudWatch, and local SageMaker services on it."""

from __future__ import annotations

import io
import json
import tarfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer
from smq.local.sagemaker import LocalSageMaker, PhaseTimings

SCRIPTS = Path(__file__).parent / "scripts"
ROLE = "arn:aws:iam::000000000000:role/SageMakerRole"
BUCKET = "smq-test"
FAST = PhaseTimings(starting=0.05, downloading=0.02, uploading=0.02, restart=0.1, metric_interval=0.2)
TERMINAL = ("Completed", "Failed", "Stopped")


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    yield f"http://127.0.0.1:{server._server.server_port}"
    server.stop()


@pytest.fixture
def aws_env(moto_endpoint: str) -> dict[str, str]:
    """The bucket is created for every test: the server shares moto's process-wide backends, which
    any other test file's `mock_aws` resets (under xdist such files run between these)."""
    env = {
        "AWS_ENDPOINT_URL_S3": moto_endpoint,
        "AWS_ENDPOINT_URL_LOGS": moto_endpoint,
        "AWS_ENDPOINT_URL_CLOUDWATCH": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    aws("s3", env).create_bucket(Bucket=BUCKET)
    return env


def aws(service: str, env: dict[str, str]) -> Any:
    variable = "AWS_ENDPOINT_URL_" + {"logs": "LOGS"}.get(service, service.upper())
    return boto3.client(
        service,
        endpoint_url=env[variable],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


class Stack:
    """A started LocalSageMaker, a boto3 client for it, and the events it emitted."""

    def __init__(self, service: LocalSageMaker, workdir: Path) -> None:
        self.service = service
        self.workdir = workdir
        self.events: list[dict[str, Any]] = []
        self.client = boto3.client(
            "sagemaker",
            endpoint_url=service.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def statuses(self, name: str) -> list[tuple[str, str]]:
        return [
            (e["detail"]["TrainingJobStatus"], e["detail"]["SecondaryStatus"])
            for e in list(self.events)
            if e["detail"]["TrainingJobName"] == name
        ]

    def wait(
        self,
        name: str,
        until: Callable[[dict[str, Any]], bool] = lambda d: d["TrainingJobStatus"] in TERMINAL,
        timeout: float = 20.0,
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            description = self.client.describe_training_job(TrainingJobName=name)
            if until(description):
                return description
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{name} never got there: {description['TrainingJobStatus']}/{description['SecondaryStatus']}"
                )
            time.sleep(0.02)

    def wait_secondary(self, name: str, secondary: str, timeout: float = 20.0) -> dict[str, Any]:
        return self.wait(name, lambda d: d["SecondaryStatus"] == secondary, timeout)

    def wait_events(self, name: str, final: str, timeout: float = 5.0) -> None:
        """Events arrive on another thread, a moment after the status changes."""
        deadline = time.monotonic() + timeout
        while not any(s == final for _, s in self.statuses(name)):
            assert time.monotonic() < deadline, self.statuses(name)
            time.sleep(0.01)


@pytest.fixture
def make_stack(tmp_path: Path, aws_env: dict[str, str]) -> Iterator[Callable[..., Stack]]:
    started: list[LocalSageMaker] = []

    def make(handler: Callable[[dict[str, Any]], None] | None = None, **options: Any) -> Stack:
        settings: dict[str, Any] = {
            "workdir": tmp_path / f"sm{len(started)}",
            "executor": "synthetic",
            "aws_env": aws_env,
            "timings": FAST,
            "stop_grace_seconds": 5.0,
        }
        settings.update(options)
        stack: Stack

        def on_event(event: dict[str, Any]) -> None:
            stack.events.append(event)
            if handler is not None:
                handler(event)

        service = LocalSageMaker(on_event=on_event, **settings)
        stack = Stack(service, settings["workdir"])
        service.start()
        started.append(service)
        return stack

    yield make
    for service in started:
        service.shutdown()


@pytest.fixture
def synthetic(make_stack: Callable[..., Stack]) -> Stack:
    return make_stack()


@pytest.fixture
def process_stack(make_stack: Callable[..., Stack]) -> Stack:
    return make_stack(executor="process")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def job_request(name: str, **overrides: Any) -> dict[str, Any]:
    """A CreateTrainingJob request like the SageMaker SDK's, minus what a test overrides."""
    request: dict[str, Any] = {
        "TrainingJobName": name,
        "RoleArn": ROLE,
        "AlgorithmSpecification": {"TrainingImage": "local/pytorch:latest", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": f"s3://{BUCKET}/output"},
        "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "HyperParameters": {},
    }
    request.update(overrides)
    return request


def synthetic_job(name: str, duration: float = 0.2, outcome: str = "complete", **overrides: Any) -> dict[str, Any]:
    hyperparameters = {"smq_synthetic_duration": str(duration), "smq_synthetic_outcome": f'"{outcome}"'}
    return job_request(name, HyperParameters=hyperparameters, **overrides)


def script_job(
    env: dict[str, str], name: str, script: str, *, args: dict[str, Any] | None = None, **overrides: Any
) -> dict[str, Any]:
    """A job running `scripts/<script>` from a sourcedir.tar.gz in S3, encoded as the SDK does."""
    source = f"source/{name}/sourcedir.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(SCRIPTS / script, arcname=script)
    aws("s3", env).put_object(Bucket=BUCKET, Key=source, Body=buffer.getvalue())
    hyperparameters = {
        "sagemaker_program": f'"{script}"',
        "sagemaker_submit_directory": f'"s3://{BUCKET}/{source}"',
        **{key: json.dumps(value) for key, value in (args or {}).items()},
    }
    return job_request(name, HyperParameters=hyperparameters, **overrides)


def s3_keys(env: dict[str, str], prefix: str) -> list[str]:
    listing = aws("s3", env).list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return sorted(item["Key"] for item in listing.get("Contents", []))


def log_lines(env: dict[str, str], name: str) -> list[str]:
    logs = aws("logs", env)
    streams = logs.describe_log_streams(logGroupName="/aws/sagemaker/TrainingJobs", logStreamNamePrefix=f"{name}/")[
        "logStreams"
    ]
    lines: list[str] = []
    for stream in sorted(streams, key=lambda s: s["logStreamName"]):
        events = logs.get_log_events(
            logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=stream["logStreamName"], startFromHead=True
        )["events"]
        lines.extend(e["message"] for e in events)
    return lines


def run_threads(count: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            target(index)
        except BaseException as exc:  # collected and re-raised on the test thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def gpu_utilization(aws_env: dict[str, str], name: str, host: int) -> tuple[float, float] | None:
    """(Minimum, Maximum) of the GPUUtilization host `algo-<host>` of job `name` reported lately."""
    data = aws("cloudwatch", aws_env).get_metric_statistics(
        Namespace="/aws/sagemaker/TrainingJobs",
        MetricName="GPUUtilization",
        Dimensions=[{"Name": "Host", "Value": f"{name}/algo-{host}"}],
        StartTime=time.time() - 300,
        EndTime=time.time() + 60,
        Period=600,
        Statistics=["Minimum", "Maximum"],
    )["Datapoints"]
    return (data[0]["Minimum"], data[0]["Maximum"]) if data else None


def wait_for_gpu_utilization(
    aws_env: dict[str, str], name: str, host: int, until: Callable[[tuple[float, float]], bool]
) -> tuple[float, float]:
    deadline = time.monotonic() + 20
    while (reported := gpu_utilization(aws_env, name, host)) is None or not until(reported):
        assert time.monotonic() < deadline, f"algo-{host} of {name} reported {reported}"
        time.sleep(0.1)
    return reported
