"""The one CreateTrainingJob validator: botocore's model, every constraint, the field it names."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from botocore.model import ServiceModel
from botocore.validate import ParamValidator
from hypothesis import HealthCheck, find, given, settings
from smq_lambda.domain.sagemaker.request_shape import (
    CREATE_TRAINING_JOB,
    MapKey,
    Rule,
    Segment,
    Violation,
    create_training_job_violations,
    input_shape,
    service_model,
    violations,
)

from tests.api.builders import instance_groups, replaced, training_request, without
from tests.support.request_shapes import values_for

VALID = training_request("vit")
SHAPE = input_shape(CREATE_TRAINING_JOB)


def found(request: Any) -> list[tuple[str | None, Rule]]:
    return [(violation.field, violation.rule) for violation in create_training_job_violations(request)]


def test_the_builders_requests_fit_the_shape() -> None:
    assert found(VALID) == []
    assert (
        found(training_request("mix", ResourceConfig=instance_groups(("ml.p5.48xlarge", 1), ("ml.g5.xlarge", 2)))) == []
    )


def test_a_request_with_many_optional_members_fits_the_shape() -> None:
    request = training_request(
        "full",
        InputDataConfig=[
            {
                "ChannelName": "train",
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/train/"}},
                "InputMode": "FastFile",
            }
        ],
        Environment={"PYTHONUNBUFFERED": "1", "NOTE": "two\nlines are fine here"},
        VpcConfig={"SecurityGroupIds": ["sg-0123"], "Subnets": ["subnet-0abc"]},
        EnableManagedSpotTraining=True,
        StoppingCondition={"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200},
        CheckpointConfig={"S3Uri": "s3://b/ckpt/", "LocalPath": "/opt/ml/checkpoints"},
        RetryStrategy={"MaximumRetryAttempts": 3},
        Tags=[{"Key": "équipe", "Value": "vision 日本"}, {"Key": "priority", "Value": "-5"}],
    )
    assert found(request) == []


CASES: list[tuple[str, Any, str | None, Rule]] = [
    # The four the issue reproduced: each got 202 and failed hours later.
    ("numeric hyperparameter", replaced(VALID, "HyperParameters", {"lr": 0.1}), "HyperParameters.lr", Rule.TYPE),
    ("numeric environment value", replaced(VALID, "Environment", {"SEED": 7}), "Environment.SEED", Rule.TYPE),
    ("null volume size", replaced(VALID, "ResourceConfig.VolumeSizeInGB", None), "ResourceConfig.VolumeSizeInGB", Rule.TYPE),
    ("string input config", replaced(VALID, "InputDataConfig", "s3://b/train"), "InputDataConfig", Rule.TYPE),
    # Types.
    ("boolean instance count", replaced(VALID, "ResourceConfig.InstanceCount", True), "ResourceConfig.InstanceCount", Rule.TYPE),
    ("decimal runtime", replaced(VALID, "StoppingCondition.MaxRuntimeInSeconds", 60.0), "StoppingCondition.MaxRuntimeInSeconds", Rule.TYPE),
    ("string spot flag", training_request("vit", EnableManagedSpotTraining="true"), "EnableManagedSpotTraining", Rule.TYPE),
    ("hyperparameters a list", replaced(VALID, "HyperParameters", ["lr=0.1"]), "HyperParameters", Rule.TYPE),
    ("tag not an object", replaced(VALID, "Tags", ["team=vision"]), "Tags[0]", Rule.TYPE),
    ("tag value a number", replaced(VALID, "Tags", [{"Key": "team", "Value": 5}]), "Tags[0].Value", Rule.TYPE),
    ("null name", replaced(VALID, "TrainingJobName", None), "TrainingJobName", Rule.TYPE),
    ("the request a list", [VALID], None, Rule.TYPE),
    (
        "channel name a number",
        training_request("vit", InputDataConfig=[{"ChannelName": 1, "DataSource": {}}]),
        "InputDataConfig[0].ChannelName",
        Rule.TYPE,
    ),
    # Required members, at every depth.
    ("no role", without(VALID, "RoleArn"), "RoleArn", Rule.REQUIRED),
    ("no input mode", without(VALID, "AlgorithmSpecification.TrainingInputMode"), "AlgorithmSpecification.TrainingInputMode", Rule.REQUIRED),
    ("tag without value", replaced(VALID, "Tags", [{"Key": "team"}]), "Tags[0].Value", Rule.REQUIRED),
    (
        "group without name",
        replaced(VALID, "ResourceConfig", {"InstanceGroups": [{"InstanceType": "ml.g5.xlarge", "InstanceCount": 1}]}),
        "ResourceConfig.InstanceGroups[0].InstanceGroupName",
        Rule.REQUIRED,
    ),
    ("vpc without subnets", training_request("vit", VpcConfig={"SecurityGroupIds": ["sg-1"]}), "VpcConfig.Subnets", Rule.REQUIRED),
    # Members the model does not have.
    ("misspelt member", replaced(VALID, "ResourceConfig.InstanceCont", 1), "ResourceConfig.InstanceCont", Rule.UNKNOWN),
    ("member of another API", training_request("vit", Priority=5), "Priority", Rule.UNKNOWN),
    # Lengths and ranges.
    ("name of 64 characters", replaced(VALID, "TrainingJobName", "a" * 64), "TrainingJobName", Rule.MAX_LENGTH),
    ("short role", replaced(VALID, "RoleArn", "arn:aws:iam::1:r"), "RoleArn", Rule.MIN_LENGTH),
    ("long output path", replaced(VALID, "OutputDataConfig.S3OutputPath", "s3://b/" + "k" * 1024), "OutputDataConfig.S3OutputPath", Rule.MAX_LENGTH),
    ("long hyperparameter", replaced(VALID, "HyperParameters", {"lr": "1" * 2501}), "HyperParameters.lr", Rule.MAX_LENGTH),
    ("101 hyperparameters", replaced(VALID, "HyperParameters", {f"k{i}": "v" for i in range(101)}), "HyperParameters", Rule.MAX_LENGTH),
    ("51 tags", replaced(VALID, "Tags", [{"Key": f"k{i}", "Value": "v"} for i in range(51)]), "Tags", Rule.MAX_LENGTH),
    ("empty tag key", replaced(VALID, "Tags", [{"Key": "", "Value": "v"}]), "Tags[0].Key", Rule.MIN_LENGTH),
    ("six instance groups", replaced(VALID, "ResourceConfig", instance_groups(*[("ml.g5.xlarge", 1)] * 6)), "ResourceConfig.InstanceGroups", Rule.MAX_LENGTH),
    ("no channels", training_request("vit", InputDataConfig=[]), "InputDataConfig", Rule.MIN_LENGTH),
    ("negative volume", replaced(VALID, "ResourceConfig.VolumeSizeInGB", -1), "ResourceConfig.VolumeSizeInGB", Rule.MIN_VALUE),
    ("zero runtime", replaced(VALID, "StoppingCondition.MaxRuntimeInSeconds", 0), "StoppingCondition.MaxRuntimeInSeconds", Rule.MIN_VALUE),
    ("runtime beyond an int", replaced(VALID, "StoppingCondition.MaxRuntimeInSeconds", 2**31), "StoppingCondition.MaxRuntimeInSeconds", Rule.MAX_VALUE),
    ("31 retries", training_request("vit", RetryStrategy={"MaximumRetryAttempts": 31}), "RetryStrategy.MaximumRetryAttempts", Rule.MAX_VALUE),
    ("keep-alive too long", replaced(VALID, "ResourceConfig.KeepAlivePeriodInSeconds", 21601), "ResourceConfig.KeepAlivePeriodInSeconds", Rule.MAX_VALUE),
    # Patterns, with Java's meaning.
    ("name with underscore", replaced(VALID, "TrainingJobName", "fresh_job"), "TrainingJobName", Rule.PATTERN),
    ("name ending with a newline", replaced(VALID, "TrainingJobName", "fresh\n"), "TrainingJobName", Rule.PATTERN),
    ("user instead of role", replaced(VALID, "RoleArn", "arn:aws:iam::123456789012:user/alice"), "RoleArn", Rule.PATTERN),
    ("role of an 11-digit account", replaced(VALID, "RoleArn", "arn:aws:iam::12345678901:role/x"), "RoleArn", Rule.PATTERN),
    ("output on local disk", replaced(VALID, "OutputDataConfig.S3OutputPath", "/tmp/out"), "OutputDataConfig.S3OutputPath", Rule.PATTERN),
    ("bucketless S3 URI", replaced(VALID, "OutputDataConfig.S3OutputPath", "s3://"), "OutputDataConfig.S3OutputPath", Rule.PATTERN),
    ("tag key with a brace", replaced(VALID, "Tags", [{"Key": "bad{key}", "Value": "v"}]), "Tags[0].Key", Rule.PATTERN),
    ("tag value with a newline", replaced(VALID, "Tags", [{"Key": "team", "Value": "a\nb"}]), "Tags[0].Value", Rule.PATTERN),
    ("hyperparameter with a newline", replaced(VALID, "HyperParameters", {"cmd": "a\nb"}), "HyperParameters.cmd", Rule.PATTERN),
    ("environment name with a dash", replaced(VALID, "Environment", {"MY-VAR": "1"}), "Environment", Rule.PATTERN),
    ("algorithm name ending in a dash", replaced(VALID, "AlgorithmSpecification.AlgorithmName", "xgb-"), "AlgorithmSpecification.AlgorithmName", Rule.PATTERN),
    ("channel name with a space", training_request("vit", InputDataConfig=[{"ChannelName": "my data", "DataSource": {}}]), "InputDataConfig[0].ChannelName", Rule.PATTERN),
    # Enums.
    ("streaming input mode", replaced(VALID, "AlgorithmSpecification.TrainingInputMode", "Stream"), "AlgorithmSpecification.TrainingInputMode", Rule.ENUM),
    ("misspelt instance type", replaced(VALID, "ResourceConfig.InstanceType", "ml.g5.xlarg"), "ResourceConfig.InstanceType", Rule.ENUM),
    ("instance type of another service", replaced(VALID, "ResourceConfig.InstanceType", "g5.xlarge"), "ResourceConfig.InstanceType", Rule.ENUM),
    (
        "group of an unknown type",
        replaced(VALID, "ResourceConfig", instance_groups(("ml.g5.xlarge", 1), ("ml.nope.large", 1))),
        "ResourceConfig.InstanceGroups[1].InstanceType",
        Rule.ENUM,
    ),
    ("lower-case compression", replaced(VALID, "OutputDataConfig.CompressionType", "gzip"), "OutputDataConfig.CompressionType", Rule.ENUM),
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_body", "field", "rule"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_the_first_violation_names_the_field_and_the_rule(request_body: Any, field: str | None, rule: Rule) -> None:
    first = create_training_job_violations(request_body)[0]

    assert (first.field, first.rule) == (field, rule)
    assert first.message.startswith(field or "the request")


BOTOCORE_CHECKS = frozenset({Rule.TYPE, Rule.REQUIRED, Rule.UNKNOWN, Rule.MIN_LENGTH, Rule.MIN_VALUE})
BOTOCORE_LETS_THROUGH = frozenset({"boolean instance count"})
"""ParamValidator takes `true` for an integer (a bool is an int in Python); SageMaker would not."""


@pytest.mark.parametrize(
    ("name", "request_body", "rule"), [(case[0], case[1], case[3]) for case in CASES], ids=[case[0] for case in CASES]
)
def test_botocore_refuses_what_it_checks_and_the_rest_is_sagemakers(name: str, request_body: Any, rule: Rule) -> None:
    """Types, required and unknown members and minimums botocore would refuse when the job starts; maximums,
    patterns and enums only SageMaker would, with a ValidationException. Either way, hours after the 202."""
    refused_by_botocore = ParamValidator().validate(request_body, SHAPE).has_errors()

    assert refused_by_botocore is (rule in BOTOCORE_CHECKS and name not in BOTOCORE_LETS_THROUGH)


def test_every_violation_is_reported_in_the_order_of_the_request() -> None:
    request = replaced(VALID, "HyperParameters", {"a": 1, "b": "x" * 2501})
    del request["RoleArn"]
    request["TrainingJobName"] = "bad_name"

    assert found(request) == [
        ("RoleArn", Rule.REQUIRED),
        ("TrainingJobName", Rule.PATTERN),
        ("HyperParameters.a", Rule.TYPE),
        ("HyperParameters.b", Rule.MAX_LENGTH),
    ]


def test_a_bad_map_key_names_its_map_and_quotes_the_key() -> None:
    (violation,) = create_training_job_violations(replaced(VALID, "HyperParameters", {"k" * 257: "v"}))

    assert (violation.field, violation.rule, violation.on_key) == ("HyperParameters", Rule.MAX_LENGTH, True)
    assert violation.message.startswith('HyperParameters key "kkk')
    assert "at most 256 characters, not 257" in violation.message


@pytest.mark.parametrize(
    ("request_body", "words"),
    [
        (replaced(VALID, "HyperParameters", {"lr": 0.1}), "HyperParameters.lr must be a string, not the number 0.1"),
        (
            replaced(VALID, "ResourceConfig.VolumeSizeInGB", None),
            "ResourceConfig.VolumeSizeInGB must be an integer, not null",
        ),
        (replaced(VALID, "InputDataConfig", "s3://b"), 'InputDataConfig must be a list, not the string "s3://b"'),
        (replaced(VALID, "ResourceConfig.InstanceCont", 1), "(did you mean InstanceCount?)"),
        (replaced(VALID, "ResourceConfig.InstanceType", "ml.g5.xlarg"), "closest: ml.g5.xlarge"),
        (replaced(VALID, "AlgorithmSpecification.TrainingInputMode", "Stream"), "must be one of Pipe, File, FastFile"),
        (replaced(VALID, "HyperParameters", {"cmd": "a\nb"}), "(where `.` matches no line break)"),
        (
            replaced(VALID, "RoleArn", "arn:aws:iam::123456789012:user/" + "a" * 100),
            'not "arn:aws:iam::123456789012:user/aaa',
        ),
    ],
)
def test_messages_say_what_to_fix(request_body: Any, words: str) -> None:
    message = create_training_job_violations(request_body)[0].message

    assert words in message
    assert len(message) < 400


def test_the_model_is_loaded_once() -> None:
    assert service_model() is service_model()
    assert input_shape(CREATE_TRAINING_JOB) is input_shape(CREATE_TRAINING_JOB)


SYNTHETIC = ServiceModel(
    {
        "metadata": {"protocol": "json", "apiVersion": "2024-01-01", "serviceId": "Synthetic", "endpointPrefix": "x"},
        "operations": {
            "Put": {"name": "Put", "input": {"shape": "PutInput"}, "http": {"method": "POST", "requestUri": "/"}}
        },
        "shapes": {
            "PutInput": {
                "type": "structure",
                "members": {"When": {"shape": "Time"}, "Choice": {"shape": "Choice"}, "Name": {"shape": "Name"}},
            },
            "Time": {"type": "timestamp"},
            "Choice": {"type": "structure", "union": True, "members": {"A": {"shape": "Name"}, "B": {"shape": "Name"}}},
            "Name": {"type": "string", "max": 3},
        },
    },
    service_name="synthetic",
)


@pytest.mark.parametrize(
    ("request_body", "expected"),
    [
        ({"When": "2024-05-01T00:00:00Z", "Choice": {"A": "x"}, "Name": "abc"}, []),
        ({"When": "not a time"}, [(("When",), Rule.BOTOCORE)]),
        ({"Choice": {"A": "x", "B": "y"}}, [(("Choice",), Rule.BOTOCORE)]),
        ({"Name": "abcd", "When": []}, [(("Name",), Rule.MAX_LENGTH), (("When",), Rule.BOTOCORE)]),
    ],
)
def test_shapes_the_walk_does_not_model_are_left_to_botocore(request_body: Any, expected: list[Any]) -> None:
    """No shape of CreateTrainingJob is a union or a timestamp today; a newer model may bring one."""
    shape = SYNTHETIC.operation_model("Put").input_shape

    assert [(violation.path, violation.rule) for violation in violations(request_body, shape)] == expected


def resolve(request: Any, path: tuple[Segment, ...]) -> Any:
    node = request
    for segment in path:
        node = node[segment.key if isinstance(segment, MapKey) else segment]
    return node


def names_a_place_in(request: Any, violation: Violation) -> bool:
    """A violation's path leads to the value it blames (or, for a missing member, to its parent)."""
    if violation.rule is Rule.REQUIRED:
        parent = resolve(request, violation.path[:-1])
        return isinstance(parent, dict) and violation.path[-1] not in parent
    if violation.on_key:
        return violation.value in resolve(request, violation.path[:-1])
    value = resolve(request, violation.path)
    return value is violation.value or value == violation.value


requests = values_for(SHAPE, depth=4)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(requests)
def test_whatever_the_validator_accepts_botocore_accepts(request: Any) -> None:
    found_here = create_training_job_violations(copy.deepcopy(request))
    report = ParamValidator().validate(request, SHAPE)

    if not found_here:
        assert not report.has_errors(), report.generate_report()
    assert all(names_a_place_in(request, violation) for violation in found_here)


def test_the_generated_requests_include_accepted_ones() -> None:
    """The property above would hold vacuously if every drawn request were refused."""
    accepted = find(requests, lambda request: isinstance(request, dict) and not create_training_job_violations(request))
    assert not ParamValidator().validate(accepted, SHAPE).has_errors()
