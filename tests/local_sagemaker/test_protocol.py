"""The wire protocol as unmodified boto3 sees it: errors, validation, listing, tags, faults."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from conftest import Stack, run_threads, synthetic_job, unique
from smq.local.sagemaker import FaultRejected, request_fault


def raw_post(url: str, target: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """One JSON 1.1 call as bytes on the wire: what no botocore serializer would send."""
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.1"}
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def error_of(call: Any, **params: Any) -> dict[str, str]:
    with pytest.raises(ClientError) as raised:
        call(**params)
    return raised.value.response["Error"] | {"status": raised.value.response["ResponseMetadata"]["HTTPStatusCode"]}


def test_a_duplicate_name_is_resource_in_use(synthetic: Stack) -> None:
    name = unique("dup")
    synthetic.client.create_training_job(**synthetic_job(name))

    with pytest.raises(synthetic.client.exceptions.ResourceInUse) as raised:
        synthetic.client.create_training_job(**synthetic_job(name.upper()))

    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "already exists" in raised.value.response["Error"]["Message"]


def test_unknown_jobs_are_resource_not_found(synthetic: Stack) -> None:
    for call in (synthetic.client.describe_training_job, synthetic.client.stop_training_job):
        with pytest.raises(synthetic.client.exceptions.ResourceNotFound):
            call(TrainingJobName="no-such-job")
    error = error_of(
        synthetic.client.list_tags, ResourceArn=("arn:aws:sagemaker:us-east-1:000000000000:training-job/no-such-job")
    )
    assert error["Code"] == "ResourceNotFound"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"TrainingJobName": "under_score"}, "trainingJobName"),
        ({"TrainingJobName": "x" * 64}, "trainingJobName"),
        ({"RoleArn": "arn:aws:iam::000000000000:user/someone"}, "roleArn"),
        ({"OutputDataConfig": {"S3OutputPath": "/tmp/out"}}, "s3OutputPath"),
        ({"ResourceConfig": {"InstanceType": "ml.nope.large", "InstanceCount": 1}}, "instanceType"),
        ({"AlgorithmSpecification": {"TrainingImage": "i", "TrainingInputMode": "Stream"}}, "trainingInputMode"),
        ({"AlgorithmSpecification": {"TrainingInputMode": "File"}}, "TrainingImage"),
        ({"HyperParameters": {"lr": "x" * 2501}}, "hyperParameters"),
        (
            {
                "InputDataConfig": [
                    {
                        "ChannelName": "bad name!",
                        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/k"}},
                    }
                ]
            },
            "channelName",
        ),
        ({"StoppingCondition": {"MaxRuntimeInSeconds": 60, "MaxWaitTimeInSeconds": 120}}, "EnableManagedSpotTraining"),
        (
            {
                "EnableManagedSpotTraining": True,
                "StoppingCondition": {"MaxRuntimeInSeconds": 600, "MaxWaitTimeInSeconds": 60},
            },
            "greater than or equal",
        ),
        ({"Tags": [{"Key": "bad{key}", "Value": "v"}]}, "tags.1.member.key"),
        ({"HyperParameters": {"smq_synthetic_outcome": "explode"}}, "smq_synthetic_outcome"),
        (
            {
                "ResourceConfig": {
                    "InstanceType": "ml.g5.xlarge",
                    "InstanceCount": 1,
                    "InstanceGroups": [{"InstanceGroupName": "a", "InstanceType": "ml.g5.xlarge", "InstanceCount": 1}],
                }
            },
            "not both",
        ),
    ],
)
def test_invalid_requests_are_validation_exceptions(synthetic: Stack, change: dict[str, Any], field: str) -> None:
    request = synthetic_job(unique("bad")) | change

    error = error_of(synthetic.client.create_training_job, **request)

    assert (error["Code"], error["status"]) == ("ValidationException", 400)
    assert field in error["Message"]


def test_instance_groups_are_accepted(synthetic: Stack) -> None:
    name = unique("groups")
    groups = [{"InstanceGroupName": "gpus", "InstanceType": "ml.g5.12xlarge", "InstanceCount": 2}]
    synthetic.client.create_training_job(
        **synthetic_job(name, duration=0, ResourceConfig={"InstanceGroups": groups, "VolumeSizeInGB": 30})
    )

    description = synthetic.wait(name)

    assert description["TrainingJobStatus"] == "Completed"
    assert description["ResourceConfig"]["InstanceGroups"] == groups


def test_the_service_checks_what_boto3_lets_through(synthetic: Stack) -> None:
    """A client with parameter validation off reaches the server with a request missing members."""
    raw = boto3.client(
        "sagemaker",
        endpoint_url=synthetic.service.url,
        region_name="us-east-1",
        aws_access_key_id="t",
        aws_secret_access_key="t",
        config=Config(parameter_validation=False),
    )
    request = synthetic_job(unique("raw"))
    del request["OutputDataConfig"]

    error = error_of(raw.create_training_job, **request)

    assert error["Code"] == "ValidationException"
    assert "outputDataConfig" in error["Message"]


@pytest.mark.parametrize(
    ("change", "code", "words"),
    [
        (
            {"HyperParameters": {"smq_synthetic_duration": 0.2}},
            "SerializationException",
            "HyperParameters.smq_synthetic_duration must be a string",
        ),
        ({"Environment": {"SEED": 7}}, "SerializationException", "Environment.SEED must be a string"),
        (
            {"ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": None}},
            "ValidationException",
            "Value null at 'resourceConfig.volumeSizeInGB'",
        ),
        ({"InputDataConfig": "s3://smq-test/train"}, "SerializationException", "InputDataConfig must be a list"),
    ],
    ids=["numeric hyperparameter", "numeric environment", "null volume", "string input config"],
)
def test_what_boto3_would_refuse_the_service_refuses_too(
    synthetic: Stack, change: dict[str, Any], code: str, words: str
) -> None:
    """The four requests the queue used to accept, sent as JSON no botocore client would send."""
    name = unique("typed")
    body = json.dumps(synthetic_job(name) | change).encode()

    status, error = raw_post(synthetic.service.url, "SageMaker.CreateTrainingJob", body)

    assert (error["__type"], status) == (code, 400)
    assert words in error["Message"]
    assert error_of(synthetic.client.describe_training_job, TrainingJobName=name)["Code"] == ("ResourceNotFound")


def test_a_finished_job_cannot_be_stopped(synthetic: Stack) -> None:
    name = unique("done")
    synthetic.client.create_training_job(**synthetic_job(name, duration=0))
    synthetic.wait(name)

    error = error_of(synthetic.client.stop_training_job, TrainingJobName=name)

    assert error["Code"] == "ValidationException"
    assert "Completed" in error["Message"]


def test_unknown_operations_and_bad_bodies_are_rejected(synthetic: Stack) -> None:
    def post(target: str, body: bytes) -> tuple[int, dict[str, Any]]:
        return raw_post(synthetic.service.url, target, body)

    assert post("SageMaker.CreateEndpoint", b"{}") == (
        400,
        {
            "__type": "UnknownOperationException",
            "Message": "Operation SageMaker.CreateEndpoint is not supported by the local SageMaker service.",
        },
    )
    status, body = post("SageMaker.ListTrainingJobs", b"{not json")
    assert (status, body["__type"]) == (400, "SerializationException")
    wrong_type = synthetic_job(unique("raw")) | {"HyperParameters": ["not", "a", "map"]}
    status, body = post("SageMaker.CreateTrainingJob", json.dumps(wrong_type).encode())
    assert (status, body["__type"]) == (400, "SerializationException")


def test_list_training_jobs_filters_and_sorts(synthetic: Stack) -> None:
    prefix = unique("list")
    names = [f"{prefix}-{i}" for i in range(5)]
    for name in names[:3]:
        synthetic.client.create_training_job(**synthetic_job(name, duration=0))
    for name in names[:3]:
        synthetic.wait(name)
    middle = time.time()
    time.sleep(0.01)
    for name in names[3:]:
        synthetic.client.create_training_job(**synthetic_job(name, duration=30))
    client = synthetic.client

    def listed(**params: Any) -> list[str]:
        return [
            s["TrainingJobName"]
            for s in client.list_training_jobs(NameContains=prefix, MaxResults=100, **params)["TrainingJobSummaries"]
        ]

    assert listed() == names
    assert listed(SortOrder="Descending") == names[::-1]
    assert listed(SortBy="Name", SortOrder="Descending") == sorted(names, reverse=True)
    assert listed(StatusEquals="Completed") == names[:3]
    assert listed(StatusEquals="InProgress") == names[3:]
    assert listed(CreationTimeAfter=middle) == names[3:]
    assert listed(CreationTimeBefore=middle) == names[:3]
    assert listed(LastModifiedTimeAfter=middle, StatusEquals="Completed") == []
    assert listed(SortBy="Status") == names[:3] + names[3:]  # "Completed" < "InProgress"
    summary = client.list_training_jobs(NameContains=names[0])["TrainingJobSummaries"][0]
    assert set(summary) == {
        "TrainingJobName",
        "TrainingJobArn",
        "CreationTime",
        "LastModifiedTime",
        "TrainingJobStatus",
        "SecondaryStatus",
        "TrainingEndTime",
    }


def test_list_training_jobs_pages_with_next_token(synthetic: Stack) -> None:
    prefix = unique("page")
    names = [f"{prefix}-{i}" for i in range(7)]
    for name in names:
        synthetic.client.create_training_job(**synthetic_job(name, duration=30))

    first = synthetic.client.list_training_jobs(NameContains=prefix, MaxResults=3)
    synthetic.client.create_training_job(**synthetic_job(f"{prefix}-late", duration=30))
    paginator = synthetic.client.get_paginator("list_training_jobs")
    pages = list(paginator.paginate(NameContains=prefix, SortOrder="Descending", PaginationConfig={"PageSize": 3}))

    assert [s["TrainingJobName"] for s in first["TrainingJobSummaries"]] == names[:3]
    rest = synthetic.client.list_training_jobs(NameContains=prefix, MaxResults=3, NextToken=first["NextToken"])
    assert [s["TrainingJobName"] for s in rest["TrainingJobSummaries"]] == names[3:6]
    assert [len(p["TrainingJobSummaries"]) for p in pages] == [3, 3, 2]
    assert [s["TrainingJobName"] for p in pages for s in p["TrainingJobSummaries"]] == [f"{prefix}-late", *names[::-1]]
    assert (
        error_of(synthetic.client.list_training_jobs, NextToken=first["NextToken"], SortBy="Name")["Code"]
        == "ValidationException"
    )
    assert error_of(synthetic.client.list_training_jobs, MaxResults=101)["Code"] == ("ValidationException")
    assert error_of(synthetic.client.list_training_jobs, StatusEquals="Running")["Code"] == ("ValidationException")


def test_tags_can_be_added_listed_and_deleted(synthetic: Stack) -> None:
    name = unique("tags")
    arn = synthetic.client.create_training_job(
        **synthetic_job(name, duration=30, Tags=[{"Key": "smq:job", "Value": "job1"}])
    )["TrainingJobArn"]
    client = synthetic.client

    client.add_tags(ResourceArn=arn, Tags=[{"Key": "team", "Value": "vision"}, {"Key": "smq:job", "Value": "job2"}])
    after_add = client.list_tags(ResourceArn=arn)["Tags"]
    client.delete_tags(ResourceArn=arn, TagKeys=["team", "absent"])

    assert after_add == [{"Key": "smq:job", "Value": "job2"}, {"Key": "team", "Value": "vision"}]
    assert client.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "smq:job", "Value": "job2"}]
    too_many = [{"Key": f"k{i}", "Value": "v"} for i in range(50)]
    assert error_of(client.add_tags, ResourceArn=arn, Tags=too_many)["Code"] == ("ValidationException")
    synthetic.client.stop_training_job(TrainingJobName=name)
    synthetic.wait_events(name, "Stopped")
    assert synthetic.events[-1]["detail"]["Tags"] == {"smq:job": "job2"}


def test_faults_can_be_injected_over_http(synthetic: Stack) -> None:
    name = unique("http-fault")
    synthetic.client.create_training_job(**synthetic_job(name, duration=30))
    synthetic.wait_secondary(name, "Training")

    request_fault(synthetic.service.url, name, "fail")

    assert synthetic.wait(name)["TrainingJobStatus"] == "Failed"
    with pytest.raises(FaultRejected, match="already ended"):
        request_fault(synthetic.service.url, name, "hang")
    with pytest.raises(FaultRejected, match="not found"):
        request_fault(synthetic.service.url, "no-such-job", "fail")
    with pytest.raises(FaultRejected, match="Unknown fault"):
        request_fault(synthetic.service.url, name, "explode")


def test_concurrent_calls_from_many_threads(synthetic: Stack) -> None:
    prefix = unique("many")

    client = synthetic.client  # botocore clients are thread-safe; sessions are not

    def worker(index: int) -> None:
        name = f"{prefix}-{index}"
        client.create_training_job(**synthetic_job(name, duration=0.3 if index % 2 else 30))
        for _ in range(5):
            client.describe_training_job(TrainingJobName=name)
            client.list_training_jobs(NameContains=prefix)
        if index % 2 == 0:
            client.stop_training_job(TrainingJobName=name)

    run_threads(12, worker)

    for index in range(12):
        final = synthetic.wait(f"{prefix}-{index}")["TrainingJobStatus"]
        assert final == ("Completed" if index % 2 else "Stopped")
    arns = {
        s["TrainingJobArn"]
        for s in synthetic.client.list_training_jobs(NameContains=prefix, MaxResults=100)["TrainingJobSummaries"]
    }
    assert len(arns) == 12
