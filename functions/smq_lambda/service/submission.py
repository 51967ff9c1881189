"""The submission rules: which CreateTrainingJob requests become queued jobs.

Everything is checked before anything is written, so a refused request leaves the table as it was.
A request is refused when SageMaker would refuse it for a lasting reason anyway (missing or malformed
members the queue relies on), or when the queue could never run it (scheduling rule 4: it names no
pool while unpooled instance types are rejected, or needs more instances than its pool holds).
Members the queue does not interpret pass through to SageMaker unchanged.

Each error names the field as a dotted path (`ResourceConfig.InstanceGroups[1].InstanceCount`) and
the rule it broke.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeGuard

from smq_lambda.domain.model import (
    ATTEMPT_TAG,
    JOB_TAG,
    MAX_PRIORITY,
    MIN_PRIORITY,
    PRIORITY_TAG,
    TRAINING_JOB_NAME_MAX,
    TRAINING_JOB_NAME_PATTERN,
    Job,
)
from smq_lambda.domain.states import JobState
from smq_lambda.errors import InvalidRequest, PayloadTooLarge
from smq_lambda.scheduling.snapshot import SchedulerConfig, UnpooledPolicy
from smq_lambda.settings import Settings

REQUIRED_MEMBERS = (
    "TrainingJobName",
    "RoleArn",
    "AlgorithmSpecification",
    "OutputDataConfig",
    "ResourceConfig",
    "StoppingCondition",
)
"""SageMaker's own model now requires only the first, second and fourth (for serverless jobs); a
job that waits for instances of a pool needs all six."""

ROLE_ARN_PATTERN = re.compile(r"arn:aws[a-z\-]*:iam::[0-9]{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+")
ROLE_ARN_MAX = 2048
S3_URI_PATTERN = re.compile(r"(https|s3)://([^/]+)/?(.*)")
S3_URI_MAX = 1024
INSTANCE_TYPE_PATTERN = re.compile(r"ml\.[a-z0-9-]+\.[a-z0-9]+")
INSTANCE_TYPE_MAX = 64
"""Every SageMaker training instance type has this shape and is far shorter; the pool becomes an
index key, which DynamoDB refuses when empty or over 2 KB."""
TRAINING_INPUT_MODES = ("File", "Pipe", "FastFile")
MAX_INSTANCE_GROUPS = 5
INSTANCE_GROUP_NAME_MAX = 64
MAX_REQUEST_BYTES = 256 * 1024
"""The largest request the queue stores, measured as it is stored (compact JSON, non-ASCII escaped),
so that with its attempt history it stays well inside DynamoDB's 400 KB item limit."""
MAX_INSTANCE_COUNT = 10_000
"""Far beyond any account's training quota; it bounds the numbers the queue stores and adds up."""
MAX_TAGS = 50
TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
RESERVED_TAGS = frozenset({JOB_TAG, ATTEMPT_TAG})
INTEGER_PATTERN = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class SubmissionPolicy:
    """The deployment's submission settings."""

    allowed_role_arns: frozenset[str] = frozenset()
    """Empty means every role is allowed."""
    checkpoint_s3_prefix: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> SubmissionPolicy:
        return cls(allowed_role_arns=settings.allowed_role_arns, checkpoint_s3_prefix=settings.checkpoint_s3_prefix)


def new_job(
    request: object,
    *,
    owner: str,
    config: SchedulerConfig,
    policy: SubmissionPolicy,
    now: datetime,
    job_id: str | None = None,
) -> Job:
    """Check `request` against the submission rules and build the pending job it becomes.

    Raises InvalidRequest naming the first field that breaks a rule.
    """
    if not isinstance(request, Mapping):
        raise InvalidRequest(None, "the body must be a JSON object: a CreateTrainingJob request")
    for member in REQUIRED_MEMBERS:
        if member not in request:
            raise _broken(member, "is required: the queue runs CreateTrainingJob requests on instances")
    name = _check_name(request["TrainingJobName"])
    _check_role(request["RoleArn"], policy)
    _check_algorithm(request["AlgorithmSpecification"])
    _check_output(request["OutputDataConfig"])
    _check_stopping(request["StoppingCondition"])
    demand = _check_resources(request["ResourceConfig"], config)
    priority = _check_tags(request.get("Tags"))
    if "CheckpointConfig" in request:
        _check_checkpoint(request["CheckpointConfig"])

    job_id = job_id or uuid.uuid4().hex
    stored = dict(request)
    if "CheckpointConfig" not in request and policy.checkpoint_s3_prefix:
        stored["CheckpointConfig"] = {"S3Uri": checkpoint_uri(policy.checkpoint_s3_prefix, name, job_id)}
    size = len(json.dumps(stored, separators=(",", ":")))
    if size > MAX_REQUEST_BYTES:
        raise PayloadTooLarge(
            None,
            f"the request takes {size} bytes as stored (compact JSON, non-ASCII characters escaped); "
            f"the limit is {MAX_REQUEST_BYTES} (256 KB)",
        )
    return Job(
        name=name,
        job_id=job_id,
        state=JobState.PENDING,
        priority=priority,
        submitted_at=now,
        demand=demand,
        owner=owner,
        version=1,
        reason="queued: waiting for the next scheduling pass",
        updated_at=now,
        request=stored,
    )


def checkpoint_uri(prefix: str, name: str, job_id: str) -> str:
    """Where every attempt of one job checkpoints: fixed at submission, so a resumed attempt finds
    what the preempted one wrote, and a later job of the same name starts clean."""
    return f"{prefix.rstrip('/')}/{name}/{job_id}/"


def check_priority(value: object, field: str = "priority") -> int:
    """A priority given as a JSON number (the PATCH body): an integer in the allowed range."""
    if not _is_int(value):
        raise _broken(field, f"must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}")
    return _priority_in_range(value, field)


def _broken(field: str, rule: str) -> InvalidRequest:
    """The error for `field` breaking `rule`; the message starts with the field's name."""
    return InvalidRequest(field, f"{field} {rule}")


def _priority_in_range(value: int, field: str) -> int:
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise _broken(field, f"{value} is out of range: a priority is from {MIN_PRIORITY} to {MAX_PRIORITY}")
    return value


def _is_int(value: object) -> TypeGuard[int]:
    """JSON integers only: `true` and `2.0` are not instance counts or priorities."""
    return isinstance(value, int) and not isinstance(value, bool)


def _object(value: object, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _broken(field, "must be an object")
    return value


def _string(value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise _broken(field, "must be a non-empty string")
    return value


def _require(container: Mapping[str, Any], member: str, path: str) -> Any:
    if member not in container:
        raise _broken(f"{path}.{member}", "is required")
    return container[member]


def _check_name(value: object) -> str:
    name = _string(value, "TrainingJobName")
    if len(name) > TRAINING_JOB_NAME_MAX:
        raise _broken("TrainingJobName", f"must be at most {TRAINING_JOB_NAME_MAX} characters, not {len(name)}")
    if not TRAINING_JOB_NAME_PATTERN.fullmatch(name):
        raise _broken(
            "TrainingJobName",
            "must match the SageMaker pattern ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$ "
            "(letters, digits and hyphens, starting and ending with a letter or digit)",
        )
    return name


def _check_role(value: object, policy: SubmissionPolicy) -> None:
    role = _string(value, "RoleArn")
    if len(role) > ROLE_ARN_MAX or not ROLE_ARN_PATTERN.fullmatch(role):
        raise _broken("RoleArn", "must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
    if policy.allowed_role_arns and role not in policy.allowed_role_arns:
        raise _broken("RoleArn", f"{role} is not one of the roles this queue may pass to SageMaker")


def _check_algorithm(value: object) -> None:
    spec = _object(value, "AlgorithmSpecification")
    if spec.get("TrainingInputMode") not in TRAINING_INPUT_MODES:
        raise _broken(
            "AlgorithmSpecification.TrainingInputMode",
            f"is required and must be one of {', '.join(TRAINING_INPUT_MODES)}",
        )
    for member in ("TrainingImage", "AlgorithmName"):
        if member in spec and not isinstance(spec[member], str):
            raise _broken(f"AlgorithmSpecification.{member}", "must be a string")
    if not spec.get("TrainingImage") and not spec.get("AlgorithmName"):
        raise _broken("AlgorithmSpecification.TrainingImage", "or AlgorithmSpecification.AlgorithmName is required")


def _check_s3_uri(value: object, field: str) -> None:
    uri = _string(value, field)
    if len(uri) > S3_URI_MAX or not S3_URI_PATTERN.fullmatch(uri):
        raise _broken(field, f"must be an S3 URI (s3://bucket/prefix) of at most {S3_URI_MAX} characters")


def _check_output(value: object) -> None:
    output = _object(value, "OutputDataConfig")
    _check_s3_uri(_require(output, "S3OutputPath", "OutputDataConfig"), "OutputDataConfig.S3OutputPath")


def _check_stopping(value: object) -> None:
    stopping = _object(value, "StoppingCondition")
    for member in ("MaxRuntimeInSeconds", "MaxWaitTimeInSeconds"):
        if member in stopping and not (_is_int(stopping[member]) and stopping[member] >= 1):
            raise _broken(f"StoppingCondition.{member}", "must be a positive integer")


def _check_checkpoint(value: object) -> None:
    checkpoint = _object(value, "CheckpointConfig")
    _check_s3_uri(_require(checkpoint, "S3Uri", "CheckpointConfig"), "CheckpointConfig.S3Uri")
    if "LocalPath" in checkpoint and not isinstance(checkpoint["LocalPath"], str):
        raise _broken("CheckpointConfig.LocalPath", "must be a string")


def _check_count(value: object, field: str) -> int:
    if _is_int(value) and 1 <= value <= MAX_INSTANCE_COUNT:
        return value
    raise _broken(field, f"must be an integer from 1 to {MAX_INSTANCE_COUNT}")


def is_instance_type(value: str) -> bool:
    """Shaped like a SageMaker training instance type (whether SageMaker offers it is its business)."""
    return len(value) <= INSTANCE_TYPE_MAX and INSTANCE_TYPE_PATTERN.fullmatch(value) is not None


def _check_instance_type(value: object, field: str) -> str:
    instance_type = _string(value, field)
    if not is_instance_type(instance_type):
        raise _broken(field, "must be a SageMaker training instance type such as ml.g5.xlarge")
    return instance_type


@dataclass(frozen=True)
class _Group:
    """One instance group of a request (a plain ResourceConfig is one group), with the fields to blame."""

    instance_type: str
    count: int
    type_field: str
    count_field: str


def _check_resources(value: object, config: SchedulerConfig) -> dict[str, int]:
    """The request's demand per instance type, after checking it could ever be met (rule 4)."""
    resources = _object(value, "ResourceConfig")
    volume = resources.get("VolumeSizeInGB")
    if volume is not None and not (_is_int(volume) and volume >= 0):
        raise _broken("ResourceConfig.VolumeSizeInGB", "must be a whole number of GB")
    groups = _instance_groups(resources) if "InstanceGroups" in resources else [_single_group(resources)]
    demand: dict[str, int] = {}
    for group in groups:
        _check_pool_exists(group, config)
        demand[group.instance_type] = demand.get(group.instance_type, 0) + group.count
        capacity = config.capacity(group.instance_type)
        if capacity is not None and demand[group.instance_type] > capacity:
            raise InvalidRequest(
                group.count_field,
                f"{group.count_field}: the job needs {demand[group.instance_type]} x {group.instance_type} but that "
                f"pool holds only {capacity}, so it could never start (a job larger than its pool is refused)",
            )
    return demand


def _single_group(resources: Mapping[str, Any]) -> _Group:
    path = "ResourceConfig"
    for member in ("InstanceType", "InstanceCount"):
        if member not in resources:
            raise _broken(f"{path}.{member}", f"is required (or {path}.InstanceGroups)")
    return _Group(
        instance_type=_check_instance_type(resources["InstanceType"], f"{path}.InstanceType"),
        count=_check_count(resources["InstanceCount"], f"{path}.InstanceCount"),
        type_field=f"{path}.InstanceType",
        count_field=f"{path}.InstanceCount",
    )


def _instance_groups(resources: Mapping[str, Any]) -> list[_Group]:
    for member in ("InstanceType", "InstanceCount"):
        if member in resources:
            raise _broken(f"ResourceConfig.{member}", "cannot be given with ResourceConfig.InstanceGroups")
    raw_groups = resources["InstanceGroups"]
    if not isinstance(raw_groups, list) or not 1 <= len(raw_groups) <= MAX_INSTANCE_GROUPS:
        raise _broken("ResourceConfig.InstanceGroups", f"must be a list of 1 to {MAX_INSTANCE_GROUPS} instance groups")
    groups: list[_Group] = []
    names: set[str] = set()
    for index, raw in enumerate(raw_groups):
        path = f"ResourceConfig.InstanceGroups[{index}]"
        group = _object(raw, path)
        name = _string(_require(group, "InstanceGroupName", path), f"{path}.InstanceGroupName")
        if len(name) > INSTANCE_GROUP_NAME_MAX or name in names:
            raise _broken(
                f"{path}.InstanceGroupName", f"must be unique and at most {INSTANCE_GROUP_NAME_MAX} characters"
            )
        names.add(name)
        groups.append(
            _Group(
                instance_type=_check_instance_type(_require(group, "InstanceType", path), f"{path}.InstanceType"),
                count=_check_count(_require(group, "InstanceCount", path), f"{path}.InstanceCount"),
                type_field=f"{path}.InstanceType",
                count_field=f"{path}.InstanceCount",
            )
        )
    return groups


def _check_pool_exists(group: _Group, config: SchedulerConfig) -> None:
    if group.instance_type in config.pools or config.unpooled is UnpooledPolicy.UNLIMITED:
        return
    raise _broken(
        group.type_field,
        f"names {group.instance_type}, which has no capacity pool, and instance types without a pool are "
        f"rejected (configured pools: {', '.join(sorted(config.pools)) or 'none'})",
    )


def _check_tags(value: object) -> int:
    """Checks the tags SageMaker will get and returns the priority the `priority` tag sets."""
    if value is None:
        return 0
    if not isinstance(value, list) or len(value) > MAX_TAGS:
        raise _broken("Tags", f"must be a list of at most {MAX_TAGS} {{Key, Value}} objects")
    seen: set[str] = set()
    priority = 0
    for index, raw in enumerate(value):
        path = f"Tags[{index}]"
        tag = _object(raw, path)
        key, tag_value = tag.get("Key"), tag.get("Value")
        if not isinstance(key, str) or not 1 <= len(key) <= TAG_KEY_MAX:
            raise _broken(f"{path}.Key", f"must be a string of 1 to {TAG_KEY_MAX} characters")
        if not isinstance(tag_value, str) or len(tag_value) > TAG_VALUE_MAX:
            raise _broken(f"{path}.Value", f"must be a string of at most {TAG_VALUE_MAX} characters")
        if key in RESERVED_TAGS:
            raise _broken(f"{path}.Key", f"{key} is a tag the queue sets on every attempt; remove it")
        if key in seen:
            raise _broken(f"{path}.Key", f"{key} appears more than once")
        seen.add(key)
        if key == PRIORITY_TAG:
            priority = _parse_priority_tag(tag_value)
    return priority


def _parse_priority_tag(value: str) -> int:
    field = f"Tags.{PRIORITY_TAG}"
    if not INTEGER_PATTERN.fullmatch(value):
        raise _broken(field, f"must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}, not {value!r}")
    return _priority_in_range(int(value), field)
