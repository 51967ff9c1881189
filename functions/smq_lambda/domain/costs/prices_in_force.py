"""Which price each instance type is charged at, and where that price came from. Pure.

Three layers, the first that prices a type wins: the configuration document's `prices` (an
operator's word: negotiated rates, private pricing), the stack's daily Price List refresh (while it
is at most REFRESH_MAX_AGE old and of the stack's own region), and the prices smq ships for the
region (domain/costs/default_prices.py). A type none of them prices stays unpriced, never $0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from smq_lambda.domain.costs.costs import Prices

REFRESH_MAX_AGE = timedelta(days=7)
"""A refresh older than this is ignored: the refresh has been failing for a week (its dead-letter
alarm says so), and shipped defaults dated in the source beat silently stale numbers."""


class PriceOrigin(StrEnum):
    CONFIGURATION = "configuration"
    PRICE_LIST = "price-list"
    DEFAULTS = "defaults"


@dataclass(frozen=True)
class RefreshedPrices:
    """What one Price List refresh found: on-demand training $/instance-hour of `region`."""

    prices: Prices
    region: str
    fetched_at: datetime


@dataclass(frozen=True)
class PricesInForce:
    prices: Prices
    origins: Mapping[str, PriceOrigin] = field(default_factory=dict)
    """Where each priced type's price came from."""
    refreshed_at: datetime | None = None
    """When the Price List refresh in force was fetched; None when none is in force."""

    @property
    def source(self) -> str:
        """The layers that priced at least one type, first wins: e.g. `configuration+price-list`;
        `none` when nothing is priced."""
        used = [origin.value for origin in PriceOrigin if origin in self.origins.values()]
        return "+".join(used) or "none"


def prices_in_force(
    configured: Prices, refreshed: RefreshedPrices | None, defaults: Prices, *, region: str | None, now: datetime
) -> PricesInForce:
    """The layers merged, first wins (see the module docstring)."""
    fresh = refreshed is not None and refreshed.region == region and now - refreshed.fetched_at <= REFRESH_MAX_AGE
    layers: list[tuple[PriceOrigin, Prices]] = [(PriceOrigin.CONFIGURATION, configured)]
    if fresh and refreshed is not None:
        layers.append((PriceOrigin.PRICE_LIST, refreshed.prices))
    layers.append((PriceOrigin.DEFAULTS, defaults))
    prices: dict[str, float] = {}
    origins: dict[str, PriceOrigin] = {}
    for origin, layer in layers:
        for instance_type, price in layer.items():
            if instance_type not in prices:
                prices[instance_type] = price
                origins[instance_type] = origin
    return PricesInForce(prices, origins, refreshed.fetched_at if fresh and refreshed is not None else None)
