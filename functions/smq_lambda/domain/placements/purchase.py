"""A job's purchase options: on demand, spot that may go on demand, or spot only.

SageMaker bills and limits managed spot and on-demand training instances apart (separate account
quotas). A managed-spot request (`EnableManagedSpotTraining` true) allows both: it is placed on spot
first and may go on demand (scheduling/purchase_options.py says when), unless it is tagged
`smq:spot-only` = `true`. A job that fell back to on demand (governance/spot.py) has an on-demand
request, so it is an on-demand job for good.

The pass decides over summaries without the request (the pending indexes project no request), so
the job carries its purchase options (`Job.purchase`), set from the request at submission and at a
fallback: the request stays the one source, the field its projection.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from smq_lambda.domain.placements.placement import SPOT_MEMBER

SPOT_ONLY_TAG = "smq:spot-only"
SPOT_ONLY_VALUE = "true"
SPOT_POOL_SUFFIX = ":spot"


class Purchase(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"
    """Spot first; on demand allowed."""
    SPOT_ONLY = "spot_only"

    @property
    def spot(self) -> bool:
        return self is not Purchase.ON_DEMAND

    @property
    def allows_on_demand(self) -> bool:
        return self is not Purchase.SPOT_ONLY


def purchase_of(request: Mapping[str, Any]) -> Purchase:
    """The purchase options a validated request allows (its `smq:spot-only` tag checked at submission)."""
    if request.get(SPOT_MEMBER) is not True:
        return Purchase.ON_DEMAND
    tags = request.get("Tags") or ()
    spot_only = any(tag.get("Key") == SPOT_ONLY_TAG and tag.get("Value") == SPOT_ONLY_VALUE for tag in tags)
    return Purchase.SPOT_ONLY if spot_only else Purchase.SPOT


def spot_pool(instance_type: str) -> str:
    """The pool that counts spot instances of `instance_type` when the `spot` section declares one."""
    return f"{instance_type}{SPOT_POOL_SUFFIX}"
