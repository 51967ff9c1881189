"""Where a flexible job may run: its placements, in the order it prefers them, and the request the
queue sends to SageMaker once the pass has chosen one.

A job is *flexible* when its request gives SageMaker's own `ResourceConfig.InstancePreferences`
(an ordered list of `InstanceType`, `InstanceCount`, `TrainingPlanArns`): each preference is a
placement. Every other job is *pinned*: it has no placements and needs what its request names
(`Job.demand`), exactly as before placements existed.

The queue, not SageMaker, chooses among the preferences: SageMaker would pick a type by its own
availability, outside the queue's count of each pool. So the request sent for an attempt is
*pinned* to the chosen placement (`pinned_request`): `InstancePreferences` is removed and
`InstanceType` / `InstanceCount` name the chosen one, so SageMaker cannot start the job on any
other type, and the pool the queue counted is the pool the job holds. The attempt records its
placement; `SelectedInstanceType` in the API is that placement's type.

A pending flexible job is listed (in the pending index, `Job.demand`, `Job.where.pool`) under its first
preference; the pass considers every preference (scheduling/placement.py).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smq_lambda.domain.sagemaker.instance_preferences import PREFERENCES_MEMBER

SPOT_MEMBER = "EnableManagedSpotTraining"
SPOT_ONLY_STOPPING_MEMBER = "MaxWaitTimeInSeconds"
PLAN_MEMBER = "TrainingPlanArn"


@dataclass(frozen=True)
class Placement:
    """One place a job may run: `count` instances of `instance_type`, counted in `pool`."""

    instance_type: str
    count: int
    pool: str = ""
    """The pool the instances count in; empty means the pool named after the instance type."""
    training_plan_arns: tuple[str, ...] = ()
    """The training plans the preference names (SageMaker's `TrainingPlanArns`)."""
    spot: bool = False
    """Managed spot capacity (`EnableManagedSpotTraining`), else on demand."""
    training_plan_arn: str | None = None
    """The training plan whose reserved capacity the placement runs on (`ResourceConfig.TrainingPlanArn`)."""
    warm_key: str | None = None
    """The warm-pool matching digest of the request pinned here (domain/warm_pools.warm_key_of), set
    at submission: a flexible job leaves and reuses warm pools at each placement by it."""
    warm_pool: str | None = None
    """The training job whose warm pool an attempt started on (scheduling/warm_pools.py); None on a
    preference, and for an attempt that started cold. Recorded so later passes count those
    instances once: as the attempt's, no longer as the warm pool's."""

    @property
    def pool_name(self) -> str:
        return self.pool or self.instance_type

    @property
    def demand(self) -> dict[str, int]:
        """What the job holds while it runs here."""
        return {self.pool_name: self.count}

    def describe(self) -> str:
        purchase = " spot" if self.spot else ""
        return f"{self.count} ×{purchase} {self.instance_type}" + (f" in {self.pool}" if self.pool else "")


def placements_of(request: Mapping[str, Any]) -> tuple[Placement, ...]:
    """The placements a validated request prefers, in its order; () for a pinned request.

    A preference without `InstanceCount` takes the request's `ResourceConfig.InstanceCount`, else 1.
    """
    resources = request.get("ResourceConfig") or {}
    preferences: Sequence[Mapping[str, Any]] = resources.get(PREFERENCES_MEMBER) or ()
    default_count = int(resources.get("InstanceCount", 1))
    spot = request.get(SPOT_MEMBER) is True
    return tuple(
        Placement(
            instance_type=preference["InstanceType"],
            count=int(preference.get("InstanceCount", default_count)),
            training_plan_arns=tuple(preference.get("TrainingPlanArns") or ()),
            spot=spot,
        )
        for preference in preferences
    )


def listing_demand(placements: Sequence[Placement]) -> dict[str, int]:
    """Where a pending flexible job is listed: its first preference's pool (its instance type, or the
    pool of the training plan it names)."""
    return placements[0].demand


def pinned_request(request: Mapping[str, Any], placement: Placement) -> dict[str, Any]:
    """`request` pinned to `placement` (a deep copy; `request` is untouched): no
    `InstancePreferences`; `InstanceType` / `InstanceCount` of the placement; its purchase option
    (on demand: `EnableManagedSpotTraining` false and the spot-only `MaxWaitTimeInSeconds` removed);
    its training plan, and no other (a job-level `TrainingPlanArn` the placement does not name would
    start the job on capacity the queue does not count). The placement is the only source of all
    of these."""
    pinned = copy.deepcopy(dict(request))
    resources = pinned.setdefault("ResourceConfig", {})
    resources.pop(PREFERENCES_MEMBER, None)
    resources.pop(PLAN_MEMBER, None)
    resources["InstanceType"] = placement.instance_type
    resources["InstanceCount"] = placement.count
    if placement.training_plan_arn is not None:
        resources[PLAN_MEMBER] = placement.training_plan_arn
    if placement.spot:
        pinned[SPOT_MEMBER] = True
    elif pinned.get(SPOT_MEMBER) is True:
        pinned[SPOT_MEMBER] = False
        stopping = pinned.get("StoppingCondition")
        if isinstance(stopping, dict):
            stopping.pop(SPOT_ONLY_STOPPING_MEMBER, None)
    return pinned


def request_as_sent(request: Mapping[str, Any], placement: Placement | None) -> Mapping[str, Any]:
    """The request an attempt was started with, as far as its instances go: pinned to the attempt's
    placement, or the request itself for an attempt without one (instance groups)."""
    return request if placement is None else pinned_request(request, placement)
