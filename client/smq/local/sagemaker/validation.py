"""Server-side checks of CreateTrainingJob and tag requests, as SageMaker makes them.

botocore only checks required members, types and minimums before sending; patterns, maximums
and enums are the service's job, so a request the real service would reject is rejected here
too, with the same error code and a message in the service's style.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping, Sized
from typing import Any

from smq.local.sagemaker.errors import SerializationError, ValidationError

NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
ROLE_PATTERN = r"^arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$"
S3_PATTERN = r"^s3://([^/]+)/?(.*)$"
CHANNEL_PATTERN = r"^[A-Za-z0-9\.\-_]+$"
INPUT_MODES = ("Pipe", "File", "FastFile")
MAX_RUNTIME_SECONDS = 28 * 24 * 3600
MAX_TAGS = 50


class Problems:
    """Collects constraint violations so one response names them all, as SageMaker's does."""

    def __init__(self) -> None:
        self._items: list[str] = []

    def constraint(self, path: str, value: Any, rule: str) -> None:
        self._items.append(
            f"Value '{value}' at '{path}' failed to satisfy constraint: Member must {rule}"
        )

    def pattern(self, path: str, value: str, pattern: str) -> None:
        if re.fullmatch(pattern, value) is None:
            self.constraint(path, value, f"satisfy regular expression pattern: {pattern}")

    def length(self, path: str, value: Sized, low: int, high: int) -> None:
        if not low <= len(value) <= high:
            self.constraint(
                path, value, f"have length between {low} and {high}, inclusive"
            )

    def raise_if_any(self) -> None:
        if self._items:
            count = len(self._items)
            noun = "error" if count == 1 else "errors"
            raise ValidationError(f"{count} validation {noun} detected: " + "; ".join(self._items))


def typed(value: Any, kind: type | tuple[type, ...], member: str) -> Any:
    """`value`, if it has the JSON type the shape wants; a wrong type is a serialization error."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SerializationError(f"Unexpected value type for member {member!r}")
    return value


def required(request: Mapping[str, Any], member: str, kind: type | tuple[type, ...]) -> Any:
    if member not in request or request[member] is None:
        raise ValidationError(f"1 validation error detected: Value null at "
                              f"'{_camel(member)}' failed to satisfy constraint: "
                              "Member must not be null")
    return typed(request[member], kind, member)


@functools.cache
def training_instance_types() -> frozenset[str]:
    """The service model's instance-type enum, so the check follows the installed botocore."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("TrainingInstanceType").enum)


def validate_create(request: Mapping[str, Any]) -> None:
    """Reject a CreateTrainingJob request the real service would reject."""
    problems = Problems()
    name = required(request, "TrainingJobName", str)
    problems.pattern("trainingJobName", name, NAME_PATTERN)
    role = required(request, "RoleArn", str)
    problems.length("roleArn", role, 20, 2048)
    problems.pattern("roleArn", role, ROLE_PATTERN)
    output = required(request, "OutputDataConfig", dict)
    problems.pattern("outputDataConfig.s3OutputPath",
                     required(output, "S3OutputPath", str), S3_PATTERN)
    _check_algorithm(required(request, "AlgorithmSpecification", dict), problems)
    _check_resources(required(request, "ResourceConfig", dict), problems)
    _check_hyperparameters(typed(request.get("HyperParameters", {}), dict, "HyperParameters"),
                           problems)
    _check_channels(typed(request.get("InputDataConfig", []), list, "InputDataConfig"), problems)
    if "CheckpointConfig" in request:
        checkpoint = typed(request["CheckpointConfig"], dict, "CheckpointConfig")
        problems.pattern("checkpointConfig.s3Uri", required(checkpoint, "S3Uri", str), S3_PATTERN)
    environment = typed(request.get("Environment", {}), dict, "Environment")
    for key, value in environment.items():
        typed(value, str, f"Environment.{key}")
    check_tags(typed(request.get("Tags", []), list, "Tags"), problems, "tags")
    problems.raise_if_any()
    _check_stopping(request)


def _check_algorithm(spec: Mapping[str, Any], problems: Problems) -> None:
    mode = required(spec, "TrainingInputMode", str)
    if mode not in INPUT_MODES:
        problems.constraint("algorithmSpecification.trainingInputMode", mode,
                            f"satisfy enum value set: [{', '.join(INPUT_MODES)}]")
    if not spec.get("TrainingImage") and not spec.get("AlgorithmName"):
        raise ValidationError("You must specify either AlgorithmSpecification.TrainingImage "
                              "or AlgorithmSpecification.AlgorithmName.")
    for member in ("ContainerEntrypoint", "ContainerArguments"):
        if member in spec:
            values = typed(spec[member], list, member)
            problems.length(f"algorithmSpecification.{_camel(member)}", values, 1, 100)
            for value in values:
                typed(value, str, member)


def _check_resources(resources: Mapping[str, Any], problems: Problems) -> None:
    groups = typed(resources.get("InstanceGroups", []), list, "InstanceGroups")
    if groups and "InstanceType" in resources:
        raise ValidationError("ResourceConfig takes either InstanceType and InstanceCount "
                              "or InstanceGroups, not both.")
    members = [(f"resourceConfig.instanceGroups.{i + 1}", typed(g, dict, "InstanceGroups"))
               for i, g in enumerate(groups)] or [("resourceConfig", resources)]
    for path, member in members:
        kind = required(member, "InstanceType", str)
        if kind not in training_instance_types():
            problems.constraint(f"{path}.instanceType", kind,
                                "satisfy enum value set: [the TrainingInstanceType values]")
        count = required(member, "InstanceCount", int)
        if count < 1:
            problems.constraint(f"{path}.instanceCount", count,
                                "have value greater than or equal to 1")


def _check_hyperparameters(hyperparameters: Mapping[str, Any], problems: Problems) -> None:
    problems.length("hyperParameters", hyperparameters, 0, 100)
    for key, value in hyperparameters.items():
        typed(value, str, f"HyperParameters.{key}")
        problems.length(f"hyperParameters.{key}.member", key, 0, 256)
        problems.length(f"hyperParameters.{key}", value, 0, 2500)


def _check_channels(channels: list[Any], problems: Problems) -> None:
    problems.length("inputDataConfig", channels, 0, 20)
    seen: set[str] = set()
    for index, raw in enumerate(channels, start=1):
        channel = typed(raw, dict, "InputDataConfig")
        path = f"inputDataConfig.{index}.member"
        name = required(channel, "ChannelName", str)
        problems.length(f"{path}.channelName", name, 1, 64)
        problems.pattern(f"{path}.channelName", name, CHANNEL_PATTERN)
        if name in seen:
            raise ValidationError(f"Channel names must be unique: {name!r} appears twice.")
        seen.add(name)
        data_source = required(channel, "DataSource", dict)
        if "S3DataSource" not in data_source:
            raise ValidationError("The local SageMaker service supports only S3DataSource "
                                  f"channels (channel {name!r}).")
        source = typed(data_source["S3DataSource"], dict, "S3DataSource")
        problems.pattern(f"{path}.dataSource.s3DataSource.s3Uri",
                         required(source, "S3Uri", str), S3_PATTERN)
        if required(source, "S3DataType", str) != "S3Prefix":
            raise ValidationError("The local SageMaker service supports only S3DataType "
                                  f"S3Prefix (channel {name!r}).")


def _check_stopping(request: Mapping[str, Any]) -> None:
    stopping = typed(request.get("StoppingCondition", {}), dict, "StoppingCondition")
    runtime = typed(stopping.get("MaxRuntimeInSeconds", 86400), int, "MaxRuntimeInSeconds")
    if not 1 <= runtime <= MAX_RUNTIME_SECONDS:
        raise ValidationError(f"MaxRuntimeInSeconds must be between 1 and {MAX_RUNTIME_SECONDS}.")
    if "MaxWaitTimeInSeconds" not in stopping:
        return
    wait = typed(stopping["MaxWaitTimeInSeconds"], int, "MaxWaitTimeInSeconds")
    if not request.get("EnableManagedSpotTraining"):
        raise ValidationError("MaxWaitTimeInSeconds can be set only when "
                              "EnableManagedSpotTraining is true.")
    if wait < runtime:
        raise ValidationError("MaxWaitTimeInSeconds must be greater than or equal to "
                              "MaxRuntimeInSeconds.")


def check_tags(tags: list[Any], problems: Problems, path: str) -> None:
    problems.length(path, tags, 0, MAX_TAGS)
    for index, raw in enumerate(tags, start=1):
        tag = typed(raw, dict, "Tag")
        key = required(tag, "Key", str)
        value = required(tag, "Value", str)
        problems.length(f"{path}.{index}.member.key", key, 1, 128)
        problems.length(f"{path}.{index}.member.value", value, 0, 256)
        for member, text in (("key", key), ("value", value)):
            if not all(_tag_character(c) for c in text):
                problems.constraint(f"{path}.{index}.member.{member}", text,
                                    r"satisfy regular expression pattern: "
                                    r"^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$")


def _tag_character(character: str) -> bool:
    """Letters, separators, numbers and `_.:/=+-@`: the tag pattern, which `re` cannot spell."""
    category = unicodedata.category(character)
    return category[0] in "LZN" or character in "_.:/=+-@"


def _camel(member: str) -> str:
    return member[:1].lower() + member[1:]
