"""Where a job is: listed, waiting, running, and what it is priced at, as one value (`Job.where`).

A job's place is read from several of its facts at once: `Job.demand` (the stored fact a pass
counts), a flexible job's preferences (`Job.placements`), its state, and the placement its current
attempt recorded. Each reader used to derive its own answer from them; `Whereabouts` derives them
all in one place, by one set of rules, so the pending index, the pass, the prices and the API
cannot disagree on where a job is listed, which pools it waits in, where it runs and at which
instance type it is priced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from smq_lambda.domain.placements.placement import Placement, listing_demand


@dataclass(frozen=True)
class Whereabouts:
    """Where one job is listed, waits, runs and what it is priced at (see the module docstring)."""

    listed: Mapping[str, int]
    """Where the job is listed while pending: its demand, or a flexible job's first preference
    (a pinned spot job placed at a purchase option, in a spot pool, is listed under its type)."""
    pools: tuple[str, ...]
    """Every pool the job waits in while pending, the one it is listed under first: each of its
    instance groups' pools, or each of a flexible job's preferences' pools."""
    instance_types: Mapping[str, int]
    """Instances per instance type the job needs now (`demand` counts them per pool, which a
    placement may name otherwise: prices and limits go by instance type)."""
    selected: Placement | None
    """The placement of the current (or last) attempt."""
    pool: str
    """The first pool of `Job.demand` (a heterogeneous job's first instance group's type): the pool
    the job is listed under."""
    instances: int
    """The instances `Job.demand` counts in `pool`."""

    @classmethod
    def of(
        cls, demand: Mapping[str, int], placements: Sequence[Placement], selected: Placement | None, *, pending: bool
    ) -> Whereabouts:
        """The whereabouts of a job of `demand` and `placements` (a flexible job's preferences),
        whose current (or last) attempt recorded `selected`, pending or not."""
        listed: Mapping[str, int]
        if placements:
            listed = listing_demand(placements)
        else:
            listed = demand if selected is None else {selected.instance_type: selected.count}
        pools = dict.fromkeys(listed)
        pools.update(dict.fromkeys(placement.pool_name for placement in placements))
        if selected is not None and not pending:
            instance_types: Mapping[str, int] = {selected.instance_type: selected.count}
        elif placements:
            instance_types = {placements[0].instance_type: placements[0].count}
        else:
            instance_types = demand
        pool = next(iter(demand))
        return cls(
            listed=listed,
            pools=tuple(pools),
            instance_types=instance_types,
            selected=selected,
            pool=pool,
            instances=demand[pool],
        )
