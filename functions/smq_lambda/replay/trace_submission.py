"""A trace's job as the service would have queued it: the request it stands for (managed spot, spot
only, a warm pool's keep-alive), its placements (a training plan's pool runs on its plan) and its
purchase options.

The virtual queue (replay/virtual_queue.py) queues each arriving trace job with `queued_job`, then
plays what happens to it; what a replayed job is reads here, without the event loop around it.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from smq_lambda.domain.config.plan_document import TrainingPlan
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import SPOT_ONLY_TAG, SPOT_ONLY_VALUE, Purchase
from smq_lambda.replay.trace_job import TraceJob, TracePreference


def queued_job(trace: TraceJob, now: datetime, plans: Mapping[str, TrainingPlan]) -> Job:
    """`trace`'s job pending from `now`; `plans` maps each plan pool (`plan:<name>`) to its plan."""
    request: dict[str, Any] = {"EnableManagedSpotTraining": True} if trace.is_spot else {}
    if trace.purchase == Purchase.SPOT_ONLY:
        request["Tags"] = [{"Key": SPOT_ONLY_TAG, "Value": SPOT_ONLY_VALUE}]
    if trace.keep_alive_s:
        request["ResourceConfig"] = {"KeepAlivePeriodInSeconds": trace.keep_alive_s}
    pinned_to_plan = (TracePreference(trace.pool, trace.instances, trace.duration_s),) if trace.pool in plans else ()
    preferences = trace.preferences or pinned_to_plan
    placements = tuple(_placement(trace, preference.pool, preference.instances, plans) for preference in preferences)
    return Job(
        name=trace.name,
        job_id=f"{zlib.crc32(trace.name.encode()):08x}",
        state=JobState.PENDING,
        priority=trace.priority,
        submitted_at=now,
        demand={trace.pool: trace.instances},
        placements=placements,
        owner=trace.team or "simulation",
        team=trace.team,
        request=request,
        max_runtime_s=trace.max_runtime_s,
        purchase=_purchase(trace),
        warm_key=(trace.warm_key or f"job:{trace.name}") if trace.keep_alive_s else None,  # no key: its own
    )


def _placement(trace: TraceJob, pool: str, instances: int, plans: Mapping[str, TrainingPlan]) -> Placement:
    """One place `trace`'s job may run: a training plan's pool runs on the plan
    (domain/placements/plan_requests.py), any other pool is an instance type."""
    plan = plans.get(pool)
    if plan is None:
        return Placement(pool, instances, spot=trace.is_spot)
    return Placement(
        plan.instance_type, instances, pool=pool, training_plan_arns=(plan.arn,), training_plan_arn=plan.arn
    )


def _purchase(trace: TraceJob) -> Purchase:
    """What `trace`'s request allows, as submission reads it (domain/purchase.purchase_of)."""
    if trace.purchase is not None:
        return Purchase(trace.purchase)
    return Purchase.SPOT if trace.is_spot else Purchase.ON_DEMAND
