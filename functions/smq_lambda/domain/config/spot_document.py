"""The `spot` section of the configuration document (see config_document.py for the whole):

    "spot": {"pools": {"ml.g5.xlarge": 4},              instance type → spot instances
             "on_demand_after_s": 1800,                 a spot job may go on demand after waiting so long
             "adaptive": {"max_interruptions_per_hour": 0.5, "half_life_s": 21600}}

SageMaker has separate account quotas for spot and on-demand training instances. A type in
`spot.pools` counts its spot instances in a pool of their own, named `<type>:spot`
(`ml.g5.xlarge:spot`) everywhere a pool is named; its on-demand instances stay in the pool named
after the type, which must be declared in `pools` (0 for none). A type with no spot pool counts
spot and on-demand instances in its one pool. A spot job that allows on demand (domain/placements/purchase.py)
may be placed on demand once it has waited `on_demand_after_s` seconds (absent: never for waiting)
or while its type's spot interruption rate, decayed with `half_life_s` (default 6 hours), is above
`adaptive.max_interruptions_per_hour` (no `adaptive`: never for the rate); see
scheduling/purchase_options.py.

Bounds: spot pool counts at most MAX_INSTANCES, durations at most MAX_SECONDS (half_life_s at
least 1), the rate a number from 0 to MAX_COUNT. Pools named `<type>:spot` are declared here, never
under `pools`. No `spot` section: spot requests count in their type's pool, as on demand, and are
never placed on demand by the queue (only the interruption and MaxWait fallbacks apply).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from smq_lambda.domain.config.bounds import MAX_COUNT, MAX_INSTANCES, MAX_SECONDS
from smq_lambda.domain.config.section_parser import SectionParser
from smq_lambda.domain.placements.purchase import SPOT_POOL_SUFFIX, spot_pool

SPOT_KEYS = ("pools", "on_demand_after_s", "adaptive")
ADAPTIVE_KEYS = ("max_interruptions_per_hour", "half_life_s")
DEFAULT_HALF_LIFE_S = 6 * 3600
"""Six hours: a burst of interruptions steers jobs on demand for an afternoon, not for days."""


@dataclass(frozen=True)
class AdaptiveSpot:
    max_interruptions_per_hour: float
    half_life_s: int = DEFAULT_HALF_LIFE_S


@dataclass(frozen=True)
class SpotSection:
    pools: Mapping[str, int]
    """Instance type → spot instances (the pool `<type>:spot`)."""
    on_demand_after_s: int | None = None
    adaptive: AdaptiveSpot | None = None


def parse_spot_section(value: Any, pools: Mapping[str, int], parser: SectionParser) -> SpotSection:
    """The `spot` section, checked against the document's on-demand `pools`."""
    members = parser.section(value, "spot", "with pools, on_demand_after_s and adaptive")
    parser.known(members, "spot", SPOT_KEYS)
    spot_pools: dict[str, int] = {}
    for instance_type, count in parser.section(
        members.get("pools", {}), "spot.pools", "of instance type to spot instances"
    ).items():
        path = f"spot.pools.{instance_type}"
        if instance_type not in pools:
            raise parser.fail(path, "its on-demand pool must be declared in pools too (0 for no on-demand instances)")
        spot_pools[instance_type] = parser.count(count, path, maximum=MAX_INSTANCES, unit="instances")
    after = members.get("on_demand_after_s")
    return SpotSection(
        pools=spot_pools,
        on_demand_after_s=None
        if after is None
        else parser.count(after, "spot.on_demand_after_s", maximum=MAX_SECONDS, unit="seconds (ten years)"),
        adaptive=_adaptive(members["adaptive"], parser) if "adaptive" in members else None,
    )


def _adaptive(value: Any, parser: SectionParser) -> AdaptiveSpot:
    members = parser.section(value, "spot.adaptive", "with max_interruptions_per_hour and half_life_s")
    parser.known(members, "spot.adaptive", ADAPTIVE_KEYS)
    if "max_interruptions_per_hour" not in members:
        raise parser.fail("spot.adaptive.max_interruptions_per_hour", "is required in an adaptive section")
    return AdaptiveSpot(
        max_interruptions_per_hour=parser.number(
            members["max_interruptions_per_hour"],
            "spot.adaptive.max_interruptions_per_hour",
            maximum=MAX_COUNT,
            what=f"a number of interruptions per hour from 0 to {MAX_COUNT}",
        ),
        half_life_s=parser.count(
            members.get("half_life_s", DEFAULT_HALF_LIFE_S),
            "spot.adaptive.half_life_s",
            minimum=1,
            maximum=MAX_SECONDS,
            unit="seconds (ten years)",
        ),
    )


def with_spot_pools(pools: Mapping[str, int], spot: SpotSection | None, parser: SectionParser) -> dict[str, int]:
    """`pools` and the spot pools, each named `<type>:spot`: every pool the queue counts."""
    for pool in pools:
        if pool.endswith(SPOT_POOL_SUFFIX):
            raise parser.fail(f"pools.{pool}", f"pools named <type>{SPOT_POOL_SUFFIX} are declared in spot.pools")
    spot_pools = {} if spot is None else {spot_pool(kind): count for kind, count in spot.pools.items()}
    return {**pools, **spot_pools}
