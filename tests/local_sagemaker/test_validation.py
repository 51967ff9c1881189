"""The local service checks CreateTrainingJob with the queue's validator, and answers in SageMaker's words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import job_request
from hypothesis import HealthCheck, given, settings
from smq.local.sagemaker.errors import ApiError, SerializationError, ValidationError
from smq.local.sagemaker.validation import Problems, check_tags, validate_create, wire_path
from smq_lambda.domain.sagemaker.request_shape import (
    CREATE_TRAINING_JOB,
    MapKey,
    create_training_job_violations,
    input_shape,
)

from tests.support.request_shapes import values_for

VALID = job_request("local-job")


def refusal(request: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as raised:
        validate_create(request)
    return raised.value


def changed(**members: Any) -> dict[str, Any]:
    return {**VALID, **members}


def test_a_valid_request_passes() -> None:
    validate_create(VALID)


@pytest.mark.parametrize(
    ("path", "wire"),
    [
        (("TrainingJobName",), "trainingJobName"),
        (("ResourceConfig", "VolumeSizeInGB"), "resourceConfig.volumeSizeInGB"),
        (("Tags", 0, "Key"), "tags.1.member.key"),
        (("ResourceConfig", "InstanceGroups", 4), "resourceConfig.instanceGroups.5.member"),
        (("HyperParameters", MapKey("lr")), "hyperParameters"),
        ((), ""),
    ],
)
def test_paths_are_written_as_sagemaker_writes_them(path: tuple[Any, ...], wire: str) -> None:
    assert wire_path(path) == wire


SAME_INPUTS: list[tuple[str, dict[str, Any], type[ApiError], str]] = [
    # The four the issue reproduced, which the queue used to accept.
    ("numeric hyperparameter", changed(HyperParameters={"lr": 0.1}), SerializationError, "'hyperParameters'"),
    ("numeric environment value", changed(Environment={"SEED": 7}), SerializationError, "'environment'"),
    ("null volume size", changed(ResourceConfig={**VALID["ResourceConfig"], "VolumeSizeInGB": None}), ValidationError,
     "Value null at 'resourceConfig.volumeSizeInGB' failed to satisfy constraint: Member must not be null"),
    ("string input config", changed(InputDataConfig="s3://b/train"), SerializationError, "'inputDataConfig'"),
    # And the constraints botocore leaves to the service.
    ("long name", changed(TrainingJobName="x" * 64), ValidationError,
     "at 'trainingJobName' failed to satisfy constraint: Member must have length less than or equal to 63"),
    ("short role", changed(RoleArn="arn:aws:iam::1:r"), ValidationError,
     ("Value 'arn:aws:iam::1:r' at 'roleArn' failed to satisfy constraint: Member must have length greater than or "
      "equal to 20")),
    ("https output", changed(OutputDataConfig={"S3OutputPath": "ftp://b/out"}), ValidationError,
     "Member must satisfy regular expression pattern: (https|s3)://([^/]+)/?(.*)"),
    ("unknown mode", changed(AlgorithmSpecification={"TrainingImage": "i", "TrainingInputMode": "Stream"}),
     ValidationError,
     ("at 'algorithmSpecification.trainingInputMode' failed to satisfy constraint: Member must satisfy enum "
      "value set: [Pipe, File, FastFile]")),
    ("long hyperparameter", changed(HyperParameters={"lr": "1" * 2501}), ValidationError,
     ("at 'hyperParameters' failed to satisfy constraint: Map value must satisfy constraint: [Member must have "
      "length less than or equal to 2500]")),
    ("environment name with a dash", changed(Environment={"MY-VAR": "1"}), ValidationError,
     ("Value 'MY-VAR' at 'environment' failed to satisfy constraint: Map keys must satisfy constraint: [Member "
      "must satisfy regular expression pattern: [a-zA-Z_][a-zA-Z0-9_]*]")),
    ("tag key with a brace", changed(Tags=[{"Key": "bad{key}", "Value": "v"}]), ValidationError,
     ("Value 'bad{key}' at 'tags.1.member.key' failed to satisfy constraint: Member must satisfy regular "
      r"expression pattern: ([\p{L}\p{Z}\p{N}_.:/=+\-@]*)")),
    ("tag without value", changed(Tags=[{"Key": "team"}]), ValidationError,
     "Value null at 'tags.1.member.value' failed to satisfy constraint: Member must not be null"),
    ("runtime beyond an int", changed(StoppingCondition={"MaxRuntimeInSeconds": 2**31}), ValidationError,
     "Member must have value less than or equal to 2147483647"),
    ("misspelt member", changed(ResourceConfig={**VALID["ResourceConfig"], "InstanceCont": 1}), SerializationError,
     "'resourceConfig.instanceCont'"),
    ("count a boolean", changed(ResourceConfig={**VALID["ResourceConfig"], "InstanceCount": True}),
     SerializationError, "'resourceConfig.instanceCount'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_body", "error", "words"), [case[1:] for case in SAME_INPUTS], ids=[case[0] for case in SAME_INPUTS]
)
def test_what_the_queue_refuses_the_service_refuses_in_its_wire_format(
    request_body: dict[str, Any], error: type[ApiError], words: str
) -> None:
    assert create_training_job_violations(request_body), "the queue's validator accepts it"

    refused = refusal(request_body)

    assert type(refused) is error and refused.code == error.code
    assert words in refused.message
    if error is ValidationError:
        assert re.match(r"[1-9][0-9]* validation errors? detected: Value ", refused.message)


def test_every_constraint_is_listed_in_one_answer() -> None:
    request = changed(TrainingJobName="bad_name", RoleArn="arn:aws:iam::123456789012:user/someone")
    del request["OutputDataConfig"]

    message = refusal(request).message

    assert message.startswith("3 validation errors detected: ")
    assert [part.split(" at '")[1].split("'")[0] for part in message.split("; ")] == [
        "outputDataConfig",
        "trainingJobName",
        "roleArn",
    ]


def test_a_wrong_type_names_the_field_as_the_queue_does_too() -> None:
    message = refusal(changed(HyperParameters={"lr": 0.1})).message

    assert message == (
        "Cannot read the value at 'hyperParameters': HyperParameters.lr must be a string, not the number 0.1"
    )


@pytest.mark.parametrize(
    ("request_body", "words"),
    [
        (changed(AlgorithmSpecification={"TrainingInputMode": "File"}), "AlgorithmSpecification.TrainingImage"),
        (
            changed(
                ResourceConfig={
                    "InstanceType": "ml.g5.xlarge",
                    "InstanceCount": 1,
                    "InstanceGroups": [{"InstanceGroupName": "a", "InstanceType": "ml.g5.xlarge", "InstanceCount": 1}],
                }
            ),
            "not both",
        ),
        (
            changed(
                ResourceConfig={
                    "KeepAlivePeriodInSeconds": 600,
                    "InstanceGroups": [{"InstanceGroupName": "a", "InstanceType": "ml.g5.xlarge", "InstanceCount": 1}],
                }
            ),
            "warm pools",
        ),
        (
            changed(ResourceConfig={"InstanceType": "ml.g5.xlarge", "InstanceCount": 0}),
            (
                "Value '0' at 'resourceConfig.instanceCount' failed to satisfy constraint: Member must have value greater "
                "than or equal to 1"
            ),
        ),
        (changed(ResourceConfig={"VolumeSizeInGB": 30}), "Value null at 'resourceConfig.instanceType'"),
        (
            changed(StoppingCondition={"MaxRuntimeInSeconds": 60, "MaxWaitTimeInSeconds": 120}),
            "EnableManagedSpotTraining",
        ),
        (changed(StoppingCondition={"MaxRuntimeInSeconds": 28 * 24 * 3600 + 1}), "MaxRuntimeInSeconds"),
        (
            changed(
                InputDataConfig=[
                    {
                        "ChannelName": "t",
                        "DataSource": {"S3DataSource": {"S3DataType": "ManifestFile", "S3Uri": "s3://b/m"}},
                    }
                ]
            ),
            "S3Prefix",
        ),
        (
            changed(OutputDataConfig={"S3OutputPath": "https://b.s3.amazonaws.com/out"}),
            "only s3:// URIs (OutputDataConfig.S3OutputPath",
        ),
        (
            changed(
                InputDataConfig=[
                    {
                        "ChannelName": "t",
                        "DataSource": {
                            "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "https://b.s3.amazonaws.com/t"}
                        },
                    }
                ]
            ),
            "InputDataConfig[0].DataSource.S3DataSource.S3Uri",
        ),
        (changed(CheckpointConfig={"S3Uri": "https://b.s3.amazonaws.com/c"}), "CheckpointConfig.S3Uri"),
        (
            {key: value for key, value in VALID.items() if key != "AlgorithmSpecification"},
            "Value null at 'algorithmSpecification'",
        ),
        (
            {key: value for key, value in VALID.items() if key != "ResourceConfig"},
            "Value null at 'resourceConfig.instanceType'",
        ),
    ],
)
def test_the_services_rules_beyond_the_shape_still_hold(request_body: dict[str, Any], words: str) -> None:
    refused = refusal(request_body)

    assert refused.code == "ValidationException" and words in refused.message


def test_tags_are_checked_against_the_same_model() -> None:
    problems = Problems()

    check_tags([{"Key": "ok", "Value": "v"}, {"Key": "", "Value": "x" * 257}], problems, "tags")

    with pytest.raises(ValidationError) as raised:
        problems.raise_if_any()
    assert raised.value.message == (
        "2 validation errors detected: Value '' at 'tags.2.member.key' failed to satisfy constraint: Member must "
        "have length greater than or equal to 1; Value '" + "x" * 257 + "' at 'tags.2.member.value' failed to "
        "satisfy constraint: Member must have length less than or equal to 256"
    )


def test_a_tag_of_the_wrong_type_is_a_serialization_error() -> None:
    with pytest.raises(SerializationError):
        check_tags([{"Key": "k", "Value": 5}], Problems(), "tags")


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(values_for(input_shape(CREATE_TRAINING_JOB), depth=4))
def test_any_request_is_answered_with_a_sagemaker_error_or_accepted(request: Any) -> None:
    """The service answers every body with one of SageMaker's errors, never a crash (a 500)."""
    try:
        validate_create(request)
    except ApiError as error:
        assert error.status == 400 and error.code in ("ValidationException", "SerializationException")
    else:
        assert not create_training_job_violations(request)
