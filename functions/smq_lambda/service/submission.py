"""The submission rules: which CreateTrainingJob requests become queued jobs.

Everything is checked before anything is written, so a refused request leaves the table as it was.
First the request must fit SageMaker's own CreateTrainingJob shape, every constraint of botocore's model
(domain/sagemaker/request_shape.py, which the local SageMaker service uses too): what SageMaker would refuse hours
later is refused now. Then the queue's own rules: the members a job on instances needs, what SageMaker
checks beyond the shape and the queue relies on (an image or algorithm, unique tag names, and its rules
for instance groups: domain/sagemaker/instance_groups.py), the roles the deployment allows, the tags (service/submission_tags.py: the tags the queue reserves,
the priority tag, the team tag, whose key is configured and which with quotas must name a configured
team, the tags the queue reads), and scheduling rule 4 (a job that names no pool while unpooled
instance types are rejected, or needs more instances than its pool holds, could never run; a flexible
job could never run when none of its preferences could; a spot job counts on its type's on-demand
pool only when it is sure to be offered it, after `spot.on_demand_after_s`; a job on a training plan
could never run without a window left: domain/placements/plan_requests.py).

A flexible request gives `ResourceConfig.InstancePreferences`, or the `smq:instance-preferences` tag
that is written as that member before anything else is checked (domain/sagemaker/instance_preferences.py).

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

from smq_lambda.domain.config.plan_document import PLAN_NAME_PATTERN, PLAN_POOL_PREFIX
from smq_lambda.domain.jobs.model import (
    MAX_PRIORITY,
    MIN_PRIORITY,
    Job,
)
from smq_lambda.domain.jobs.states import TERMINAL_STATES, JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import SPOT_POOL_SUFFIX, Purchase, spot_pool
from smq_lambda.domain.placements.requested_resources import RequestedResources, requested_resources
from smq_lambda.domain.sagemaker.instance_groups import RequestedGroup
from smq_lambda.domain.sagemaker.instance_preferences import blamed_on_tag, tag_value_field, with_tagged_preferences
from smq_lambda.domain.sagemaker.request_shape import Rule, create_training_job_violations
from smq_lambda.errors import InvalidRequest, PayloadTooLarge
from smq_lambda.scheduling.snapshot import SchedulerConfig, UnpooledPolicy
from smq_lambda.service.submission_tags import broken, check_tags, priority_in_range
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
    written, tag_field = with_tagged_preferences(request)
    try:
        if tag_field is not None:
            _check_shape(written, config)
        for member in REQUIRED_MEMBERS:
            if member not in written:
                raise broken(member, "is required: the queue runs CreateTrainingJob requests on instances")
        _check_role(written["RoleArn"], policy)
        _check_algorithm(written["AlgorithmSpecification"])
        requested = requested_resources(written, config.training_plans, now)
        _check_resources(requested, config)
    except InvalidRequest as exc:
        raise blamed_on_tag(exc, tag_field) from None
    tags = check_tags(request.get("Tags", ()), config)
    name: str = written["TrainingJobName"]

    job_id = job_id or uuid.uuid4().hex
    stored = dict(written)  # `requested` reads nothing the checkpoint changes (no warm-pool digest names it)
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
        demand=requested.demand,
        owner=owner,
        version=1,
        reason="queued: waiting for the next scheduling pass",
        updated_at=now,
        request=stored,
        team=tags.team,
        expected_duration_s=tags.expected_duration_s,
        family=tags.family,
        budget_override=tags.budget_override,
        max_runtime_s=_max_runtime(written["StoppingCondition"]),
        placements=requested.placements,
        purchase=requested.purchase,
        warm_key=requested.warm_key,
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
        raise broken(field, f"must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}")
    return priority_in_range(value, field)


def _is_int(value: object) -> TypeGuard[int]:
    """JSON integers only: `true` and `2.0` are not priorities."""
    return isinstance(value, int) and not isinstance(value, bool)


def _check_shape(request: Mapping[str, Any], config: SchedulerConfig) -> None:
    """SageMaker's CreateTrainingJob shape, every constraint botocore's model states; the first
    violation is the answer (a request is usually fixed one field at a time).

    One exception: an instance type the operator configured a pool for is accepted even when the
    bundled botocore model predates it, since SageMaker adds instance types faster than a deployed
    queue upgrades botocore, and a configured pool says the type exists. And the value of the
    `smq:instance-preferences` tag may hold commas, which SageMaker's tag pattern lacks: the queue
    removes that tag before SageMaker sees the request."""
    consumed = tag_value_field(request)
    violations = [
        violation
        for violation in create_training_job_violations(request)
        if not (violation.rule is Rule.ENUM and violation.value in config.pools)
        and not (violation.rule is Rule.PATTERN and violation.field == consumed)
    ]
    if violations:
        raise InvalidRequest(violations[0].field, violations[0].message)


def _check_role(role: str, policy: SubmissionPolicy) -> None:
    if policy.allowed_role_arns and role not in policy.allowed_role_arns:
        raise broken("RoleArn", f"{role} is not one of the roles this queue may pass to SageMaker")


def _check_algorithm(spec: Mapping[str, Any]) -> None:
    if not spec.get("TrainingImage") and not spec.get("AlgorithmName"):
        raise broken("AlgorithmSpecification.TrainingImage", "or AlgorithmSpecification.AlgorithmName is required")


def is_instance_type(value: str) -> bool:
    """Shaped like a SageMaker training instance type (whether SageMaker offers it is its business)."""
    return len(value) <= INSTANCE_TYPE_MAX and INSTANCE_TYPE_PATTERN.fullmatch(value) is not None


def is_pool_name(value: str) -> bool:
    """Shaped like a pool's name: an instance type, its spot pool (`<type>:spot`) or a training
    plan's pool (`plan:<name>`)."""
    if value.startswith(PLAN_POOL_PREFIX):
        return PLAN_NAME_PATTERN.fullmatch(value.removeprefix(PLAN_POOL_PREFIX)) is not None
    return is_instance_type(value.removesuffix(SPOT_POOL_SUFFIX))


def _check_resources(requested: RequestedResources, config: SchedulerConfig) -> None:
    """Whether the instances the request asks for could ever be met (rule 4); a request on a training
    plan's were checked against the plan (domain/placements/plan_requests.py)."""
    if requested.preferences:
        _check_preferences(requested, config)
        return
    if requested.placements:
        return
    # A heterogeneous spot job counts in its types' own pools (scheduling/purchase_options.py).
    purchase = Purchase.ON_DEMAND if requested.heterogeneous else requested.purchase
    demand: dict[str, int] = {}
    for group in requested.groups:
        _check_pool_exists(group, config)
        demand[group.instance_type] = demand.get(group.instance_type, 0) + group.count
        pools = _pools_of(group.instance_type, purchase, config)
        too_small = _too_small(group.instance_type, demand[group.instance_type], pools, config)
        if too_small is not None:
            raise InvalidRequest(
                group.count_field,
                f"{group.count_field}: the job needs {demand[group.instance_type]} x {group.instance_type} but "
                f"{too_small}, so it could never start (a job larger than its pool is refused)"
                + _on_demand_out_of_reach(group.instance_type, demand[group.instance_type], purchase, config),
            )


def _check_pool_exists(group: RequestedGroup, config: SchedulerConfig) -> None:
    if group.instance_type in config.pools or config.unpooled is UnpooledPolicy.UNLIMITED:
        return
    raise broken(
        group.type_field,
        f"names {group.instance_type}, which has no capacity pool, and instance types without a pool are "
        f"rejected (configured pools: {', '.join(sorted(config.pools)) or 'none'})",
    )


def _check_preferences(requested: RequestedResources, config: SchedulerConfig) -> None:
    """A flexible request is refused by rule 4 only when none of its preferences could ever run (the
    pass never chooses one that cannot, and explains it)."""
    why_never = [
        _why_never(preference, placement, requested.purchase, config)
        for preference, placement in zip(requested.preferences, requested.placements, strict=True)
    ]
    if all(why_never):
        raise broken(
            "ResourceConfig.InstancePreferences", "could never start the job: " + "; ".join(map(str, why_never))
        )


def _why_never(
    preference: RequestedGroup, placement: Placement, purchase: Purchase, config: SchedulerConfig
) -> str | None:
    """Why the job could never run at `preference` (counted in `placement`'s pool, or for a spot job in
    the pools its purchase options allow), or None when it could."""
    pools = (placement.pool,) if placement.pool else _pools_of(placement.instance_type, purchase, config)
    if not any(pool in config.pools for pool in pools) and config.capacity(pools[0]) == 0:
        return f"{preference.type_field} {preference.instance_type} has no capacity pool"
    too_small = _too_small(preference.instance_type, preference.count, pools, config)
    if too_small is not None:
        out_of_reach = _on_demand_out_of_reach(preference.instance_type, preference.count, purchase, config)
        return (
            f"{preference.count_field}: {preference.count} x {preference.instance_type} is too many: {too_small}"
            + out_of_reach
        )
    return None


def _pools_of(instance_type: str, purchase: Purchase, config: SchedulerConfig) -> tuple[str, ...]:
    """The pools a job of one instance type is sure to be offered (scheduling/purchase_options.py):
    a spot job of a type with a spot pool that pool, and its type's too when it allows on demand and
    may go there after waiting `spot.on_demand_after_s`; any other job its type's. The `adaptive`
    rule alone does not count: it offers on demand only while the type is interrupted often, so a
    job larger than its spot pool would wait beside on-demand room for as long as spot runs well."""
    spot = config.spot
    if not purchase.spot or spot is None or instance_type not in spot.pools:
        return (instance_type,)
    if purchase.allows_on_demand and spot.on_demand_after_s is not None:
        return (spot_pool(instance_type), instance_type)
    return (spot_pool(instance_type),)


def _on_demand_out_of_reach(instance_type: str, count: int, purchase: Purchase, config: SchedulerConfig) -> str:
    """For a spot job refused as larger than its spot pool, when its type's on-demand pool could hold
    it: why the queue will not place it there, and how to run there; else ''."""
    spot = config.spot
    if (
        spot is None
        or not purchase.spot
        or not purchase.allows_on_demand
        or instance_type not in spot.pools
        or spot.on_demand_after_s is not None
    ):
        return ""
    capacity = config.capacity(instance_type)
    if capacity is None or count > capacity:
        return ""
    placed = (
        "places a spot job there only while the type's spot interruption rate is above "
        "spot.adaptive.max_interruptions_per_hour"
        if spot.adaptive is not None
        else "never places a spot job there"
    )
    return (
        f"; the on-demand pool {instance_type} holds {capacity}, but the queue {placed} "
        f"(spot.on_demand_after_s is not set): submit the job on demand (EnableManagedSpotTraining false) to run there"
    )


def _too_small(instance_type: str, count: int, pools: tuple[str, ...], config: SchedulerConfig) -> str | None:
    """None when one of `pools` could hold `count` instances of `instance_type`; else what they hold,
    in words."""
    capacities = {pool: config.capacity(pool) for pool in pools}
    if any(capacity is None or count <= capacity for capacity in capacities.values()):
        return None
    if pools == (instance_type,):
        return f"that pool holds only {capacities[instance_type]}"
    if len(pools) == 1:
        return f"its pool {pools[0]} holds only {capacities[pools[0]]}"
    return "its pools hold only " + " and ".join(f"{capacity} ({pool})" for pool, capacity in capacities.items())


def _max_runtime(stopping: Mapping[str, Any]) -> int | None:
    """StoppingCondition.MaxRuntimeInSeconds (SageMaker requires it; its shape is checked above)."""
    value = stopping.get("MaxRuntimeInSeconds")
    return value if _is_int(value) else None
