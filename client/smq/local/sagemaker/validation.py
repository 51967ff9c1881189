"""Server-side checks of CreateTrainingJob and tag requests, as SageMaker makes them.

botocore only checks required members, types and minimums before sending; maximums, patterns and
enums are the service's job. The shape is checked by the queue's own validator
(smq_lambda.domain.sagemaker.request_shape, against botocore's model), so the queue's API and this service
refuse the same requests; here its findings are answered in SageMaker's wire format:

- a value of the wrong JSON type, or a member the model does not have, is a SerializationException
  (the body does not deserialize into the shape);
- a missing or null required member, and every broken length, range, pattern or enum, is one
  ValidationException listing them all: "2 validation errors detected: Value 'x' at
  'resourceConfig.instanceType' failed to satisfy constraint: Member must satisfy enum value set: [...]".
  Lists are addressed as SageMaker does (`tags.1.member.key`, one-based), a map entry at its map
  ("Map value must satisfy constraint: [...]").

The service's rules beyond the shape (an image or an algorithm, instance groups or an instance type,
spot waits, the longest runtime) and what this local service cannot run follow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sized
from typing import Any

from smq_lambda.domain.sagemaker.request_shape import (
    MapKey,
    Rule,
    Segment,
    Violation,
    create_training_job_violations,
    input_shape,
    violations,
)

from smq.local.sagemaker.errors import SerializationError, ValidationError

MAX_RUNTIME_SECONDS = 28 * 24 * 3600
MAX_TAGS = 50
"""Tags one resource may hold, counting those it has (AddTags)."""
_CONSTRAINTS = {
    Rule.MIN_LENGTH: "have length greater than or equal to {}",
    Rule.MAX_LENGTH: "have length less than or equal to {}",
    Rule.MIN_VALUE: "have value greater than or equal to {}",
    Rule.MAX_VALUE: "have value less than or equal to {}",
    Rule.PATTERN: "satisfy regular expression pattern: {}",
}


class Problems:
    """Collects constraint violations so one response names them all, as SageMaker's does."""

    def __init__(self) -> None:
        self._items: list[str] = []

    def constraint(self, path: str, value: Any, rule: str) -> None:
        self._items.append(f"Value '{value}' at '{path}' failed to satisfy constraint: Member must {rule}")

    def missing(self, path: str) -> None:
        self._items.append(_null_at(path))

    def pattern(self, path: str, value: str, pattern: str) -> None:
        if re.fullmatch(pattern, value) is None:
            self.constraint(path, value, f"satisfy regular expression pattern: {pattern}")

    def length(self, path: str, value: Sized, low: int, high: int) -> None:
        if not low <= len(value) <= high:
            self.constraint(path, value, f"have length between {low} and {high}, inclusive")

    def shape(self, found: Iterable[Violation], prefix: str = "") -> None:
        """Add the shape's findings under the wire path `prefix`; a value of the wrong type or an
        unknown member is raised at once, as a SerializationException."""
        for violation in found:
            path = wire_path(violation.path, prefix)
            if _unreadable(violation):
                raise SerializationError(f"Cannot read the value at '{path}': {violation.message}")
            self._items.append(_constraint_sentence(violation, path))

    def raise_if_any(self) -> None:
        if self._items:
            count = len(self._items)
            noun = "error" if count == 1 else "errors"
            raise ValidationError(f"{count} validation {noun} detected: " + "; ".join(self._items))


def wire_path(path: tuple[Segment, ...], prefix: str = "") -> str:
    """A path as SageMaker's messages write it: camelCase members, `.N.member` for list items
    (one-based), and a map entry at its map."""
    parts = [prefix] if prefix else []
    for index, segment in enumerate(path):
        if isinstance(segment, int):
            parts.append(f"{segment + 1}.member")
        elif isinstance(segment, MapKey):
            if index < len(path) - 1:
                parts.append(segment.key)
        else:
            parts.append(_camel(segment))
    return ".".join(parts)


def _unreadable(violation: Violation) -> bool:
    """A value of the wrong JSON type or a member the model lacks: the body does not deserialize.
    A null is read as a missing member."""
    if violation.rule is Rule.TYPE:
        return violation.value is not None
    return violation.rule in (Rule.UNKNOWN, Rule.BOTOCORE)


def _constraint_sentence(violation: Violation, path: str) -> str:
    if violation.rule in (Rule.REQUIRED, Rule.TYPE):
        return _null_at(path)
    if violation.rule is Rule.ENUM:
        rule = f"satisfy enum value set: [{', '.join(violation.limit)}]"
    else:
        rule = _CONSTRAINTS[violation.rule].format(violation.limit)
    if violation.path and isinstance(violation.path[-1], MapKey):
        part = "Map keys" if violation.on_key else "Map value"
        return (
            f"Value '{_java_text(violation.value)}' at '{path}' failed to satisfy constraint: "
            f"{part} must satisfy constraint: [Member must {rule}]"
        )
    return f"Value '{_java_text(violation.value)}' at '{path}' failed to satisfy constraint: Member must {rule}"


def _null_at(path: str) -> str:
    return f"Value null at '{path}' failed to satisfy constraint: Member must not be null"


def _java_text(value: Any) -> str:
    """A value as the service's Java messages print it (`[a, b]`, `{k=v}`, `true`)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(_java_text(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}={_java_text(item)}" for key, item in value.items()) + "}"
    return str(value)


def typed(value: Any, kind: type | tuple[type, ...], member: str) -> Any:
    """`value`, if it has the JSON type the shape wants; a wrong type is a serialization error."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SerializationError(f"Unexpected value type for member {member!r}")
    return value


def required(request: Mapping[str, Any], member: str, kind: type | tuple[type, ...]) -> Any:
    if member not in request or request[member] is None:
        raise ValidationError(f"1 validation error detected: {_null_at(_camel(member))}")
    return typed(request[member], kind, member)


def validate_create(request: Mapping[str, Any]) -> None:
    """Reject a CreateTrainingJob request the real service would reject."""
    problems = Problems()
    problems.shape(create_training_job_violations(request))
    problems.raise_if_any()
    _check_algorithm(request)
    _check_resources(request.get("ResourceConfig", {}))
    _check_channels(request.get("InputDataConfig", []))
    _check_stopping(request)
    _check_s3_schemes(request)


def validate_update(params: Mapping[str, Any]) -> None:
    """Reject an UpdateTrainingJob request the real service would reject, or one asking for what
    this local service does not model (Debugger profiling, remote debugging)."""
    problems = Problems()
    problems.shape(violations(params, input_shape("UpdateTrainingJob")))
    problems.raise_if_any()
    others = sorted(set(params) - {"TrainingJobName", "ResourceConfig"})
    if others or "ResourceConfig" not in params:
        raise ValidationError(
            "The local SageMaker service updates only ResourceConfig.KeepAlivePeriodInSeconds"
            + (f", not {', '.join(others)}." if others else "; the request has no ResourceConfig.")
        )


def check_tags(tags: list[Any], problems: Problems, path: str) -> None:
    """A tag list against the model's TagList shape; `path` is its wire path (`tags`)."""
    problems.shape(violations(tags, input_shape("AddTags").members["Tags"]), prefix=path)


def _check_algorithm(request: Mapping[str, Any]) -> None:
    """The model no longer requires an algorithm (serverless jobs have none); a job that runs one does."""
    if "AlgorithmSpecification" not in request:
        raise ValidationError(f"1 validation error detected: {_null_at('algorithmSpecification')}")
    spec = request["AlgorithmSpecification"]
    if not spec.get("TrainingImage") and not spec.get("AlgorithmName"):
        raise ValidationError(
            "You must specify either AlgorithmSpecification.TrainingImage or AlgorithmSpecification.AlgorithmName."
        )


def _check_resources(resources: Mapping[str, Any]) -> None:
    groups = resources.get("InstanceGroups", [])
    if groups and "InstanceType" in resources:
        raise ValidationError("ResourceConfig takes either InstanceType and InstanceCount or InstanceGroups, not both.")
    if groups and "KeepAlivePeriodInSeconds" in resources:
        raise ValidationError("Managed warm pools (KeepAlivePeriodInSeconds) are not supported with InstanceGroups.")
    problems = Problems()
    members = [(f"resourceConfig.instanceGroups.{i + 1}.member", group) for i, group in enumerate(groups)] or [
        ("resourceConfig", resources)
    ]
    for path, member in members:
        for name in ("InstanceType", "InstanceCount"):
            if name not in member:
                problems.missing(f"{path}.{_camel(name)}")
        if member.get("InstanceCount", 1) < 1:
            problems.constraint(
                f"{path}.instanceCount", member["InstanceCount"], "have value greater than or equal to 1"
            )
    problems.raise_if_any()


def _check_channels(channels: list[Mapping[str, Any]]) -> None:
    seen: set[str] = set()
    for channel in channels:
        name = channel["ChannelName"]
        if name in seen:
            raise ValidationError(f"Channel names must be unique: {name!r} appears twice.")
        seen.add(name)
        source = channel["DataSource"].get("S3DataSource")
        if source is None:
            raise ValidationError(
                f"The local SageMaker service supports only S3DataSource channels (channel {name!r})."
            )
        if source["S3DataType"] != "S3Prefix":
            raise ValidationError(f"The local SageMaker service supports only S3DataType S3Prefix (channel {name!r}).")


def _check_stopping(request: Mapping[str, Any]) -> None:
    stopping = request.get("StoppingCondition", {})
    runtime = stopping.get("MaxRuntimeInSeconds", 86400)
    if runtime > MAX_RUNTIME_SECONDS:
        raise ValidationError(f"MaxRuntimeInSeconds must be between 1 and {MAX_RUNTIME_SECONDS}.")
    if "MaxWaitTimeInSeconds" not in stopping:
        return
    if not request.get("EnableManagedSpotTraining"):
        raise ValidationError("MaxWaitTimeInSeconds can be set only when EnableManagedSpotTraining is true.")
    if stopping["MaxWaitTimeInSeconds"] < runtime:
        raise ValidationError("MaxWaitTimeInSeconds must be greater than or equal to MaxRuntimeInSeconds.")


def _check_s3_schemes(request: Mapping[str, Any]) -> None:
    """SageMaker also takes an S3 location as an https:// URL; this service reads and writes
    through the S3 endpoint it is given, by bucket and key, so it needs s3:// URIs."""
    uris = {"OutputDataConfig.S3OutputPath": request["OutputDataConfig"]["S3OutputPath"]}
    if "CheckpointConfig" in request:
        uris["CheckpointConfig.S3Uri"] = request["CheckpointConfig"]["S3Uri"]
    for index, channel in enumerate(request.get("InputDataConfig", [])):
        uris[f"InputDataConfig[{index}].DataSource.S3DataSource.S3Uri"] = channel["DataSource"]["S3DataSource"]["S3Uri"]
    for field, uri in uris.items():
        if not uri.startswith("s3://"):
            raise ValidationError(f"The local SageMaker service supports only s3:// URIs ({field}: {uri}).")


def _camel(member: str) -> str:
    return member[:1].lower() + member[1:]
