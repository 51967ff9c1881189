"""The submission rules: which CreateTrainingJob requests become queued jobs.

Everything is checked before anything is written, so a refused request leaves the table as it was.
First the request must fit SageMaker's own CreateTrainingJob shape, every constraint of botocore's model
(domain/request_shape.py, which the local SageMaker service uses too): what SageMaker would refuse hours
later is refused now. Then the queue's own rules: the members a job on instances needs, what SageMaker
checks beyond the shape and the queue relies on (an image or algorithm, unique tag names, and its rules
for instance groups: domain/instance_groups.py), the roles the deployment allows, the tags the queue reserves, the priority
tag, the team tag (its key configured: `config.teams.tag`; with quotas it must name a configured team),
the `smq:expected-duration` tag, and scheduling rule 4 (a job that names no pool while unpooled
instance types are rejected, or needs more instances than its pool holds, could never run).

Each error names the field as a dotted path (`ResourceConfig.InstanceGroups[1].InstanceCount`) and
the rule it broke.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeGuard

from smq_lambda.domain.access import AccessPolicy
from smq_lambda.domain.budgets import BUDGET_OVERRIDE_TAG, BUDGET_OVERRIDE_VALUE
from smq_lambda.domain.durations import EXPECTED_DURATION_TAG, parse_duration
from smq_lambda.domain.instance_groups import RequestedGroup, requested_groups
from smq_lambda.domain.model import (
    ATTEMPT_TAG,
    JOB_TAG,
    MAX_PRIORITY,
    MIN_PRIORITY,
    PRIORITY_TAG,
    STACK_TAG,
    Job,
)
from smq_lambda.domain.request_shape import CREATE_TRAINING_JOB, Rule, create_training_job_violations, input_shape
from smq_lambda.domain.states import TERMINAL_STATES, JobState
from smq_lambda.errors import AccessDenied, InvalidRequest, PayloadTooLarge
from smq_lambda.forecast.durations import FAMILY_TAG
from smq_lambda.governance.idle_scope import EXEMPT_TAG
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

INSTANCE_TYPE_PATTERN = re.compile(r"ml\.[a-z0-9-]+\.[a-z0-9]+")
INSTANCE_TYPE_MAX = 64
"""The shape of a pool name in a query (GET /jobs?pool=): every SageMaker training instance type has it
and is far shorter; the pool becomes an index key, which DynamoDB refuses when empty or over 2 KB."""
MAX_REQUEST_BYTES = 256 * 1024
"""The largest request the queue stores, measured as it is stored (compact JSON, non-ASCII escaped),
so that with its attempt history it stays well inside DynamoDB's 400 KB item limit."""
RESERVED_TAG_PREFIX = "smq:"
"""The queue tags every attempt with `smq:job`, `smq:attempt` and `smq:stack`, and drops a request's
own tags under this prefix when it starts one (adapters/sagemaker.py), so they are refused here
rather than lost; except `smq:expected-duration`, `smq:family`, `smq:idle-exempt` and
`smq:budget-override`, which the queue reads (domain/durations.py, forecast/durations.py,
governance/idle_scope.py, domain/budgets.py)."""
READ_RESERVED_TAGS = (EXPECTED_DURATION_TAG, FAMILY_TAG, EXEMPT_TAG, BUDGET_OVERRIDE_TAG)
QUEUE_TAGS = (JOB_TAG, ATTEMPT_TAG, STACK_TAG)
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
    _check_shape(request, config)
    for member in REQUIRED_MEMBERS:
        if member not in request:
            raise _broken(member, "is required: the queue runs CreateTrainingJob requests on instances")
    name: str = request["TrainingJobName"]
    _check_role(request["RoleArn"], policy)
    _check_algorithm(request["AlgorithmSpecification"])
    demand = _check_resources(request, config)
    tags = _check_tags(request.get("Tags", ()), config)

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
        priority=tags.priority,
        submitted_at=now,
        demand=demand,
        owner=owner,
        version=1,
        reason="queued: waiting for the next scheduling pass",
        updated_at=now,
        request=stored,
        team=tags.team,
        expected_duration_s=tags.expected_duration_s,
        family=tags.family,
        budget_override=tags.budget_override,
        max_runtime_s=_max_runtime(request["StoppingCondition"]),
    )


def last_finished_job_id(holder: Job | None) -> str | None:
    """The id of the newest finished job of a name, from the job that holds it now (itself when
    finished, else the one it replaced): an identical request is a retry while this id is what it
    was when the request first came, and a resubmission once the job it queued has ended."""
    if holder is None:
        return None
    return holder.job_id if holder.state in TERMINAL_STATES else next(iter(holder.earlier_job_ids), None)


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
    """JSON integers only: `true` and `2.0` are not priorities."""
    return isinstance(value, int) and not isinstance(value, bool)


def _check_shape(request: Mapping[str, Any], config: SchedulerConfig) -> None:
    """SageMaker's CreateTrainingJob shape, every constraint botocore's model states; the first
    violation is the answer (a request is usually fixed one field at a time).

    One exception: an instance type the operator configured a pool for is accepted even when the
    bundled botocore model predates it, since SageMaker adds instance types faster than a deployed
    queue upgrades botocore, and a configured pool says the type exists."""
    violations = [
        violation
        for violation in create_training_job_violations(request)
        if not (violation.rule is Rule.ENUM and violation.value in config.pools)
    ]
    if violations:
        raise InvalidRequest(violations[0].field, violations[0].message)


def _check_role(role: str, policy: SubmissionPolicy) -> None:
    if policy.allowed_role_arns and role not in policy.allowed_role_arns:
        raise _broken("RoleArn", f"{role} is not one of the roles this queue may pass to SageMaker")


def _check_algorithm(spec: Mapping[str, Any]) -> None:
    if not spec.get("TrainingImage") and not spec.get("AlgorithmName"):
        raise _broken("AlgorithmSpecification.TrainingImage", "or AlgorithmSpecification.AlgorithmName is required")


def is_instance_type(value: str) -> bool:
    """Shaped like a SageMaker training instance type (whether SageMaker offers it is its business)."""
    return len(value) <= INSTANCE_TYPE_MAX and INSTANCE_TYPE_PATTERN.fullmatch(value) is not None


def _check_resources(request: Mapping[str, Any], config: SchedulerConfig) -> dict[str, int]:
    """The request's demand per instance type, after SageMaker's rules for its instance groups and
    checking it could ever be met (rule 4)."""
    demand: dict[str, int] = {}
    for group in requested_groups(request):
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


def _check_pool_exists(group: RequestedGroup, config: SchedulerConfig) -> None:
    if group.instance_type in config.pools or config.unpooled is UnpooledPolicy.UNLIMITED:
        return
    raise _broken(
        group.type_field,
        f"names {group.instance_type}, which has no capacity pool, and instance types without a pool are "
        f"rejected (configured pools: {', '.join(sorted(config.pools)) or 'none'})",
    )


@dataclass(frozen=True)
class _Tags:
    """What the queue reads from a request's tags."""

    priority: int = 0
    team: str | None = None
    """The value of the configured team tag (`config.teams.tag`); an empty value is no team."""
    expected_duration_s: int | None = None
    family: str | None = None
    """The `smq:family` tag's value; an empty value is no family."""
    budget_override: bool = False


def _check_tags(tags: Sequence[Mapping[str, str]], config: SchedulerConfig) -> _Tags:
    """The request's own tags leave room for the queue's and use no reserved or repeated key; returns the
    priority the `priority` tag sets, the team the team tag names and the expected duration."""
    most = input_shape(CREATE_TRAINING_JOB).members["Tags"].metadata["max"] - len(QUEUE_TAGS)
    if len(tags) > most:
        raise _broken(
            "Tags",
            f"may hold at most {most} tags: SageMaker takes {most + len(QUEUE_TAGS)}, and the queue "
            f"adds {', '.join(QUEUE_TAGS)} to every attempt",
        )
    seen: set[str] = set()
    read = _Tags()
    for index, tag in enumerate(tags):
        key = tag["Key"]
        if key.startswith(RESERVED_TAG_PREFIX) and key not in READ_RESERVED_TAGS:
            raise _broken(f"Tags[{index}].Key", f"{key}: tags starting with {RESERVED_TAG_PREFIX} are the queue's own")
        if key in seen:
            raise _broken(f"Tags[{index}].Key", f"{key} appears more than once")
        seen.add(key)
        if key == PRIORITY_TAG:
            read = replace(read, priority=_parse_priority_tag(tag["Value"]))
        if key == config.teams.tag:
            read = replace(read, team=_check_team(tag["Value"], config))
        if key == EXPECTED_DURATION_TAG:
            read = replace(read, expected_duration_s=_parse_duration_tag(tag["Value"]))
        if key == FAMILY_TAG:
            read = replace(read, family=tag["Value"] or None)
        if key == BUDGET_OVERRIDE_TAG:
            read = replace(read, budget_override=_check_budget_override_tag(tag["Value"]))
    return read


def _check_team(value: str, config: SchedulerConfig) -> str | None:
    """The team the team tag names (an empty value is no team). With quotas configured it must name a
    configured team exactly: a typo, or "vision " for "vision", would otherwise run unassigned, on what
    the teams leave, while the tagger believes it has the team's quota. Nothing is stripped, so what is
    stored is what SageMaker gets."""
    if not value or not config.teams.enabled or value in config.teams.quotas:
        return value or None
    blank = " (note the leading or trailing whitespace: values are compared exactly)" if value != value.strip() else ""
    raise _broken(
        f"Tags[{config.teams.tag}]",
        f"{value!r} is not a configured team{blank}; the {config.teams.tag!r} tag must name one of: "
        f"{', '.join(repr(team) for team in sorted(config.teams.quotas))}, or be left out to run unassigned",
    )


def _parse_priority_tag(value: str) -> int:
    field = f"Tags.{PRIORITY_TAG}"
    if not INTEGER_PATTERN.fullmatch(value):
        raise _broken(field, f"must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}, not {value!r}")
    return _priority_in_range(int(value), field)


def _check_budget_override_tag(value: str) -> bool:
    if value != BUDGET_OVERRIDE_VALUE:
        raise _broken(
            f"Tags[{BUDGET_OVERRIDE_TAG}]",
            f"must be {BUDGET_OVERRIDE_VALUE!r} (lets the job start whatever its team's hold budget says), not {value!r}",
        )
    return True


def check_budget_override(job: Job, caller: str, access: AccessPolicy) -> None:
    """Only an admin may let a job through its team's hold budget: AccessDenied for anyone else."""
    if job.budget_override and not access.is_admin(caller):
        field = f"Tags[{BUDGET_OVERRIDE_TAG}]"
        raise AccessDenied(
            field,
            "admin_principals",
            f"{field}: only an admin may let a job start whatever its team's budget says, and {caller} is not one",
        )


def _parse_duration_tag(value: str) -> int:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise _broken(f"Tags[{EXPECTED_DURATION_TAG}]", str(exc)) from None


def _max_runtime(stopping: Mapping[str, Any]) -> int | None:
    """StoppingCondition.MaxRuntimeInSeconds (SageMaker requires it; its shape is checked above)."""
    value = stopping.get("MaxRuntimeInSeconds")
    return value if _is_int(value) else None
