"""Purchase options: a spot job's placements on spot and on demand (with a `spot` section only).

SageMaker counts spot and on-demand training instances against separate quotas, and a type in the
`spot` section (domain/config/spot_document.py) has a spot pool of its own, `<type>:spot`. Before the walk,
each pending spot job (`Job.purchase`, domain/placements/purchase.py) is handed to the placement phase as a
flexible job whose placements are its purchase options, in this order:

1. spot, for each instance type it may run on (its own, or each instance preference in turn), in
   the type's spot pool, or in the type's one pool when the type has no spot pool; a preference on
   a training plan stays where it is, on the plan's reserved capacity (in the plan's pool);
2. on demand, for each of those types with a spot pool, once the job may go on demand. A job that
   allows on demand (not tagged `smq:spot-only`) may when it has waited `on_demand_after_s` since
   it was (re)queued. While its type's spot interruption rate (domain/placements/spot_rates.py) is above
   `adaptive.max_interruptions_per_hour`, or when the type's spot pool can never hold it (and it
   may go on demand after a wait, which would be a wait for nothing), it goes on demand directly:
   the on-demand placement takes the spot one's place.

Before that, only the spot placements are usable, and the reason of a job that waits says when it
may go on demand (a time, not a countdown: a reason that changed every pass would be written every
pass). A job that fell back (interrupted too often, or stopped at its MaxWait) has an
on-demand request: it is no spot job. So is every job without a `spot` section, and a
heterogeneous job (instance groups) keeps its request's purchase option: both pass unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TypeVar

from smq_lambda.domain.config.spot_document import SpotSection
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import SPOT_POOL_SUFFIX, spot_pool
from smq_lambda.scheduling.features import Feature, PassInputs
from smq_lambda.scheduling.reasons import timestamp

K = TypeVar("K", str, tuple[str, str])


@dataclass(frozen=True)
class Offer:
    """A job as the placement phase sees it, and what its wait reason adds (None: nothing)."""

    job: Job
    note: str | None = None


def offered(
    pending: Sequence[Job], now: datetime, spot: SpotSection | None, rates: Mapping[str, float]
) -> tuple[list[Job], dict[str, str]]:
    """`pending` with each spot job's purchase options as its placements, and the notes by job name."""
    if spot is None:
        return list(pending), {}
    offers = [offer(job, now, spot, rates) for job in pending]
    return [each.job for each in offers], {each.job.name: each.note for each in offers if each.note is not None}


def offer(job: Job, now: datetime, spot: SpotSection, rates: Mapping[str, float]) -> Offer:
    """`job` with the placements of the module docstring; unchanged when it is no spot job."""
    preferences = job.placements or _pinned(job)
    if not job.purchase.spot or not preferences:
        return Offer(job)
    may_from = _on_demand_from(job, spot)
    waited = may_from is not None and now >= may_from
    first: list[Placement] = []
    later: list[Placement] = []
    for preference in preferences:
        if preference.pool:
            first.append(preference)
            continue
        on_spot = replace(
            preference, spot=True, pool=spot_pool(preference.instance_type) if _has_pool(preference, spot) else ""
        )
        on_demand = replace(preference, spot=False, pool="")
        if not job.purchase.allows_on_demand:
            first.append(on_spot)
        elif _interrupted_often(preference.instance_type, spot, rates) or (
            may_from is not None and _beyond_spot_pool(preference, spot)
        ):
            first.append(on_demand)
        else:
            first.append(on_spot)
            if waited and _has_pool(preference, spot):
                later.append(on_demand)
    note = None
    if job.purchase.allows_on_demand and may_from is not None and not waited and any(p.spot for p in first):
        note = f"may go on demand from {timestamp(may_from)}"
    return Offer(replace(job, placements=(*first, *later)), note)


def listed_fronts(sizes: Mapping[K, int]) -> dict[K, int]:
    """Queue fronts (scheduling/queue_front.py) as the pass reads them: no job is listed under a spot
    pool (a spot job is listed under its type), so a spot pool's front (keyed by pool, or by pool
    and team) is read from its type's listing, added to the type's own."""
    listed: dict[K, int] = {}
    for key, size in sizes.items():
        at = _listing(key)
        listed[at] = listed.get(at, 0) + size
    return listed


def _listing(key: K) -> K:
    if isinstance(key, tuple):
        return (key[0].removesuffix(SPOT_POOL_SUFFIX), key[1])
    return key.removesuffix(SPOT_POOL_SUFFIX)


def requeued_at(job: Job) -> datetime:
    """When the job last joined the queue: its submission, or the end of its last attempt."""
    ends = [attempt.ended_at for attempt in job.attempts if attempt.ended_at is not None]
    return max(ends, default=job.submitted_at)


def _on_demand_from(job: Job, spot: SpotSection) -> datetime | None:
    if spot.on_demand_after_s is None:
        return None
    return requeued_at(job) + timedelta(seconds=spot.on_demand_after_s)


def _pinned(job: Job) -> tuple[Placement, ...]:
    """A pinned job of one instance type as its one placement; () for a heterogeneous job."""
    if len(job.demand) != 1:
        return ()
    return (Placement(job.where.pool, job.where.instances),)


def _has_pool(placement: Placement, spot: SpotSection) -> bool:
    return placement.instance_type in spot.pools


def _beyond_spot_pool(placement: Placement, spot: SpotSection) -> bool:
    """The type's spot pool can never hold the placement: waiting for spot would be waiting for good."""
    return _has_pool(placement, spot) and placement.count > spot.pools[placement.instance_type]


def _interrupted_often(instance_type: str, spot: SpotSection, rates: Mapping[str, float]) -> bool:
    adaptive = spot.adaptive
    return adaptive is not None and rates.get(instance_type, 0.0) > adaptive.max_interruptions_per_hour


class PurchaseOptionsFeature(Feature):
    """Purchase options in the pass: each spot job's options are its placements, its wait reason
    noting when it may go on demand."""

    def prepare(self, inputs: PassInputs) -> PassInputs:
        pending, notes = offered(inputs.pending, inputs.now, inputs.config.spot, inputs.snapshot.spot_rates)
        return replace(inputs, pending=pending, notes={**inputs.notes, **notes})
