"""What a CreateTrainingJob request asks for, read once at submission: its instances (instance groups,
or a flexible request's preferences), where it may run (its placements, those on a training plan in
the plan's pool), its purchase options, its warm-pool keep-alive and matching digest.

Submission (service/submission.py) checks the queue's rules against this one value and builds the
job from it, so each member of the request is read by one parser, once. Readers of a stored request
later (a spot fallback's purchase options, the keep-alive an attempt was sent) read the one member
they need from the request as it is then: this value also checks the request against the configured
training plans as they are at submission.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from smq_lambda.domain.config.plan_document import TrainingPlan
from smq_lambda.domain.placements.placement import Placement, listing_demand, pinned_request
from smq_lambda.domain.placements.plan_requests import plan_placements
from smq_lambda.domain.placements.purchase import Purchase, purchase_of
from smq_lambda.domain.sagemaker.instance_groups import RequestedGroup, requested_groups
from smq_lambda.domain.sagemaker.instance_preferences import PREFERENCES_MEMBER, requested_preferences
from smq_lambda.domain.warm.warm_match import keep_alive_seconds
from smq_lambda.domain.warm.warm_pools import warm_key_of


@dataclass(frozen=True)
class RequestedResources:
    """The instances a request asks for and where it may run on them (the module docstring)."""

    groups: tuple[RequestedGroup, ...]
    """The instance groups a pinned request names (a plain ResourceConfig is one group), with the
    fields to blame; () for a flexible request."""
    preferences: tuple[RequestedGroup, ...]
    """A flexible request's preferences in its order, with the fields to blame; () for a pinned one."""
    placements: tuple[Placement, ...]
    """Where the job may run (`Job.placements`): a flexible request's preferences, or the one
    placement of a request pinned to a training plan, those on a plan in its pool, each with the
    warm-pool digest of the request pinned there; () for any other pinned request."""
    purchase: Purchase
    """Its purchase options (`Job.purchase`)."""
    keep_alive_s: int
    """How long it asks SageMaker to keep its instances warm after it ends (0: not at all)."""
    warm_key: str | None
    """Its warm-pool matching digest when it may leave or reuse a warm pool (`Job.warm_key`)."""

    @property
    def demand(self) -> dict[str, int]:
        """Instances per pool, in the order the request names them (`Job.demand`): where a job with
        placements is listed (its first), else its groups' instances per instance type."""
        if self.placements:
            return listing_demand(self.placements)
        demand: dict[str, int] = {}
        for group in self.groups:
            demand[group.instance_type] = demand.get(group.instance_type, 0) + group.count
        return demand

    @property
    def heterogeneous(self) -> bool:
        """Its groups name more than one instance type."""
        return len({group.instance_type for group in self.groups}) > 1


def requested_resources(
    request: Mapping[str, Any], plans: Mapping[str, TrainingPlan], now: datetime
) -> RequestedResources:
    """What `request` (checked by botocore's shape) asks for, after SageMaker's rules for its instance
    groups or preferences and the queue's for training plans (domain/placements/plan_requests.py),
    in that order. Raises InvalidRequest naming the first field that breaks one."""
    resources = request["ResourceConfig"]
    groups: list[RequestedGroup] = []
    preferences: list[RequestedGroup] = []
    if PREFERENCES_MEMBER in resources:
        preferences = requested_preferences(request)
    else:
        groups = requested_groups(request)
    placements = plan_placements(request, plans, now)
    return RequestedResources(
        groups=tuple(groups),
        preferences=tuple(preferences),
        placements=tuple(
            replace(placement, warm_key=warm_key_of(pinned_request(request, placement))) for placement in placements
        ),
        purchase=purchase_of(request),
        keep_alive_s=keep_alive_seconds(request),
        warm_key=warm_key_of(request),
    )
