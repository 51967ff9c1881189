"""The SageMaker adapter: exact requests and the error map (botocore Stubber), and the calls moto
implements (create, describe, list with pagination)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from moto.core import DEFAULT_ACCOUNT_ID
from moto.sagemaker.models import sagemaker_backends
from smq_lambda.adapters.sagemaker import START_ERRORS, SageMakerTrainingService
from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.errors import StartRefused, TrainingServiceError
from smq_lambda.ports import TrainingJobStatus

from tests.adapters.builders import G5, P5, T0, job, request
from tests.support.aws import REGION

LASTING_CODES = {"ValidationException", "ResourceNotFound", "AccessDeniedException", "AccessDenied"}
TRANSIENT_CODES = {
    "ResourceLimitExceeded",
    "CapacityError",
    "InsufficientCapacityError",
    "ThrottlingException",
    "Throttling",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "ConflictException",
    "InternalFailure",
    "InternalServerError",
    "ServiceUnavailable",
    "ExpiredTokenException",
}


def started(name: str = "train", **kwargs: Any) -> Job:
    """A job whose first attempt the scheduler has just opened."""
    return lifecycle.start(job(name, **kwargs), T0, reason="fits")


@pytest.fixture(scope="module")
def offline_client() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


@pytest.fixture
def stub(offline_client: Any) -> Iterator[Stubber]:
    with Stubber(offline_client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture(scope="module")
def unreachable_client() -> Any:
    """A client whose endpoint is a closed local port, tried once."""
    return boto3.client(
        "sagemaker",
        region_name=REGION,
        endpoint_url="http://127.0.0.1:9",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=2),
    )


@pytest.fixture
def service(offline_client: Any) -> SageMakerTrainingService:
    return SageMakerTrainingService(offline_client, page_size=2)


# ------------------------------------------------------------------------ start


def test_start_sends_the_request_as_submitted_with_the_attempt_name_and_queue_tags(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    spoofed = [
        {"Key": "priority", "Value": "5"},
        {"Key": "smq:job", "Value": "someone-else"},
        {"Key": "team", "Value": "vision"},
        {"Key": "smq:attempt", "Value": "99"},
    ]
    current = started("train", tags=spoofed)
    submitted = copy.deepcopy(dict(current.request))
    expected = {
        **submitted,
        "TrainingJobName": current.attempts[0].training_job_name,
        "Tags": [
            {"Key": "priority", "Value": "5"},
            {"Key": "team", "Value": "vision"},
            {"Key": "smq:job", "Value": "train"},
            {"Key": "smq:attempt", "Value": "1"},
        ],
    }
    stub.add_response("create_training_job", {"TrainingJobArn": "arn:aws:sagemaker:::training-job/x"}, expected)

    service.start_attempt(current)

    assert current.request == submitted


def test_a_request_without_tags_gets_the_queue_tags(stub: Stubber, service: SageMakerTrainingService) -> None:
    current = started("bare")
    body = dict(current.request)
    del body["Tags"]
    current = replace(current, request=body)
    stub.add_response(
        "create_training_job",
        {"TrainingJobArn": "arn"},
        {
            **body,
            "TrainingJobName": current.attempts[0].training_job_name,
            "Tags": [{"Key": "smq:job", "Value": "bare"}, {"Key": "smq:attempt", "Value": "1"}],
        },
    )

    service.start_attempt(current)


def test_resource_in_use_for_the_attempt_name_means_already_started(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    stub.add_client_error("create_training_job", "ResourceInUse", "Training job names must be unique")

    service.start_attempt(started())


def test_every_mapped_code_is_tested_here() -> None:
    assert set(START_ERRORS) == LASTING_CODES | TRANSIENT_CODES


@pytest.mark.parametrize(
    ("code", "lasting"),
    [(code, True) for code in sorted(LASTING_CODES)] + [(code, False) for code in sorted(TRANSIENT_CODES)],
)
def test_start_refusals_are_lasting_or_transient_by_error_code(
    stub: Stubber, service: SageMakerTrainingService, code: str, lasting: bool
) -> None:
    stub.add_client_error("create_training_job", code, f"message of {code}")

    with pytest.raises(StartRefused) as refused:
        service.start_attempt(started())

    assert refused.value.lasting is lasting
    assert refused.value.reason == f"{code}: message of {code}"


def test_an_unknown_error_code_is_transient(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_client_error("create_training_job", "SomethingNew", "never seen before")

    with pytest.raises(StartRefused) as refused:
        service.start_attempt(started())

    assert refused.value.lasting is False


def test_a_request_botocore_rejects_is_a_lasting_refusal_and_sends_nothing(unreachable_client: Any) -> None:
    """Sent anywhere, the request would meet a closed port and be refused as transient."""
    current = started()
    body = dict(current.request)
    del body["RoleArn"]

    with pytest.raises(StartRefused) as refused:
        SageMakerTrainingService(unreachable_client).start_attempt(replace(current, request=body))

    assert refused.value.lasting is True
    assert "RoleArn" in refused.value.reason


def test_an_unreachable_sagemaker_is_a_transient_refusal(unreachable_client: Any) -> None:
    with pytest.raises(StartRefused) as refused:
        SageMakerTrainingService(unreachable_client).start_attempt(started())

    assert refused.value.lasting is False
    assert refused.value.reason.startswith("SageMaker could not be reached")


def test_a_job_without_an_attempt_cannot_be_started(service: SageMakerTrainingService) -> None:
    with pytest.raises(ValueError, match="no attempt"):
        service.start_attempt(job("never-started"))


# ------------------------------------------------------------------------ stop


def test_stop_sends_stop_training_job(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_response("stop_training_job", {}, {"TrainingJobName": "train-1"})

    service.stop("train-1")


@pytest.mark.parametrize("code", ["ValidationException", "ResourceNotFound"])
def test_stopping_a_job_that_is_ending_or_gone_is_fine(
    stub: Stubber, service: SageMakerTrainingService, code: str
) -> None:
    stub.add_client_error("stop_training_job", code, "The training job is in status Completed")

    service.stop("train-1")


def test_other_stop_failures_are_raised_typed(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_client_error("stop_training_job", "ThrottlingException", "Rate exceeded")

    with pytest.raises(TrainingServiceError) as failed:
        service.stop("train-1")

    assert failed.value.operation == "StopTrainingJob"
    assert failed.value.code == "ThrottlingException"


# ------------------------------------------------------------------------ describe


def _description(name: str, status: str = "InProgress", **extra: Any) -> dict[str, Any]:
    return {
        "TrainingJobName": name,
        "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{DEFAULT_ACCOUNT_ID}:training-job/{name}",
        "TrainingJobStatus": status,
        "SecondaryStatus": extra.pop("SecondaryStatus", "Training"),
        "AlgorithmSpecification": {"TrainingInputMode": "File"},
        "ResourceConfig": extra.pop("ResourceConfig", {"InstanceType": G5, "InstanceCount": 1, "VolumeSizeInGB": 30}),
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "CreationTime": T0,
        "ModelArtifacts": {"S3ModelArtifacts": "s3://bucket/model.tar.gz"},
        **extra,
    }


def test_describe_reports_status_reason_and_end(stub: Stubber, service: SageMakerTrainingService) -> None:
    ended = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
    stub.add_response(
        "describe_training_job",
        _description(
            "train-1", "Failed", SecondaryStatus="Failed", FailureReason="AlgorithmError: boom", TrainingEndTime=ended
        ),
        {"TrainingJobName": "train-1"},
    )

    status = service.describe("train-1")

    assert status == TrainingJobStatus(
        name="train-1",
        status="Failed",
        secondary_status="Failed",
        failure_reason="AlgorithmError: boom",
        end_time=ended,
    )


@pytest.mark.parametrize(
    ("code", "message"),
    [("ValidationException", "Requested resource not found."), ("ResourceNotFound", "not found")],
)
def test_describe_of_an_unknown_name_is_none(
    stub: Stubber, service: SageMakerTrainingService, code: str, message: str
) -> None:
    stub.add_client_error("describe_training_job", code, message)

    assert service.describe("nobody") is None


def test_other_describe_failures_are_raised_typed(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_client_error("describe_training_job", "InternalFailure", "oops")

    with pytest.raises(TrainingServiceError) as failed:
        service.describe("train-1")

    assert failed.value.code == "InternalFailure"


# ------------------------------------------------------------------------ external usage


def _listing(*names: str, token: str | None = None) -> dict[str, Any]:
    page: dict[str, Any] = {
        "TrainingJobSummaries": [
            {
                "TrainingJobName": name,
                "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{DEFAULT_ACCOUNT_ID}:training-job/{name}",
                "CreationTime": T0,
                "TrainingJobStatus": "InProgress",
            }
            for name in names
        ]
    }
    if token is not None:
        page["NextToken"] = token
    return page


def test_external_usage_pages_through_busy_jobs_and_counts_only_others_on_pooled_types(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    stub.add_response(
        "list_training_jobs", _listing("ours-1", "ext-a", token="t1"), {"StatusEquals": "InProgress", "MaxResults": 2}
    )
    stub.add_response(
        "list_training_jobs", _listing("ext-b"), {"StatusEquals": "InProgress", "MaxResults": 2, "NextToken": "t1"}
    )
    stub.add_response("list_training_jobs", _listing("ext-c", "ours-2"), {"StatusEquals": "Stopping", "MaxResults": 2})
    groups = {
        "InstanceGroups": [
            {"InstanceType": P5, "InstanceCount": 2, "InstanceGroupName": "a"},
            {"InstanceType": G5, "InstanceCount": 1, "InstanceGroupName": "b"},
        ],
        "VolumeSizeInGB": 30,
    }
    unpooled = {"InstanceType": "ml.c5.xlarge", "InstanceCount": 4, "VolumeSizeInGB": 30}
    for name, resources in [
        ("ext-a", {"InstanceType": G5, "InstanceCount": 3, "VolumeSizeInGB": 30}),
        ("ext-b", groups),
        ("ext-c", unpooled),
    ]:
        stub.add_response(
            "describe_training_job", _description(name, ResourceConfig=resources), {"TrainingJobName": name}
        )

    usage = service.external_usage([G5, P5], ["ours-1", "ours-2"])

    assert usage == {G5: 4, P5: 2}


def test_external_usage_describes_a_job_once(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_response("list_training_jobs", _listing("ext-a"), {"StatusEquals": "InProgress", "MaxResults": 2})
    stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})
    stub.add_response("describe_training_job", _description("ext-a"), {"TrainingJobName": "ext-a"})
    stub.add_response("list_training_jobs", _listing("ext-a"), {"StatusEquals": "InProgress", "MaxResults": 2})
    stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})

    first = service.external_usage([G5], [])
    second = service.external_usage([G5], [])

    assert first == second == {G5: 1}


def test_a_job_that_ended_between_list_and_describe_counts_nothing(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    stub.add_response("list_training_jobs", _listing("gone"), {"StatusEquals": "InProgress", "MaxResults": 2})
    stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})
    stub.add_client_error("describe_training_job", "ValidationException", "Requested resource not found.")

    assert service.external_usage([G5], []) == {}


def test_a_failed_listing_is_raised_typed(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_client_error("list_training_jobs", "ThrottlingException", "Rate exceeded")

    with pytest.raises(TrainingServiceError) as failed:
        service.external_usage([G5], [])

    assert failed.value.operation == "ListTrainingJobs"


# ------------------------------------------------------------------------ against moto


def test_on_moto_an_attempt_is_created_tagged_and_described(sagemaker_client: Any) -> None:
    service = SageMakerTrainingService(sagemaker_client)
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
    assert service.describe("moto-never-created") is None


def test_on_moto_external_usage_crosses_pages() -> None:
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

    usage = SageMakerTrainingService(client, page_size=2).external_usage([G5, P5], ours)

    expected: dict[str, int] = {}
    for name, (kind, count) in jobs.items():
        if name not in ours:
            expected[kind] = expected.get(kind, 0) + count
    assert usage == expected
