"""The PriceSource port: the prices in force, from three layers (domain/costs/prices_in_force.py).

- the configuration document's `prices`, through the ConfigSource (hot-reloaded within a minute);
- the daily Price List refresh (handlers/price_refresh.py), one item of the queue table:

      name        S  `#prices`: job names cannot contain '#', so it never collides with a job
      fetched_at  S  when the refresh read the Price List (fixed-width UTC text, item_codec)
      region      S  the region priced: the stack's own
      prices      M  {instance type: N} on-demand training $ per instance-hour

  at most a few hundred types of a few dozen bytes each, far below DynamoDB's 400 KB item limit;
  no indexed attribute, so in no index, and no TTL (an old refresh is ignored, never deleted);
- the shipped defaults for the stack's region (domain/costs/default_prices.py).

The `#prices` item changes once a day, so each container reads it at most every REFRESH_READ_EVERY
(a read is one eventually consistent GetItem). DynamoDB throttled or out of reach raises
ServiceUnavailable rather than falling back to the defaults: an attempt priced from the wrong layer
would be recorded for good, and the caller's retry prices it right.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools import Logger

from smq_lambda.adapters.attribute_values import format_time, parse_time
from smq_lambda.adapters.dynamodb_errors import unavailable_as_typed
from smq_lambda.domain.costs.costs import Prices
from smq_lambda.domain.costs.default_prices import default_prices
from smq_lambda.domain.costs.prices_in_force import PricesInForce, RefreshedPrices, prices_in_force
from smq_lambda.ports import ConfigSource
from smq_lambda.settings import Settings

logger = Logger(service="smq", child=True)

PRICES_KEY = {"name": {"S": "#prices"}}
REFRESH_READ_EVERY = timedelta(minutes=5)


def _now() -> datetime:
    return datetime.now(UTC)


class DynamoRefreshedPrices:
    """The `#prices` item: written by the daily refresh, read by every function that prices."""

    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def save(self, refreshed: RefreshedPrices) -> None:
        item = {
            **PRICES_KEY,
            "fetched_at": {"S": format_time(refreshed.fetched_at)},
            "region": {"S": refreshed.region},
            "prices": {"M": {name: {"N": f"{price:.10f}"} for name, price in sorted(refreshed.prices.items())}},
        }
        with unavailable_as_typed():
            self._client.put_item(TableName=self._table, Item=item)

    def load(self) -> RefreshedPrices | None:
        """The last refresh; None before the first, or when the item cannot be read as one (logged)."""
        with unavailable_as_typed():
            item = self._client.get_item(TableName=self._table, Key=PRICES_KEY).get("Item")
        if item is None:
            return None
        try:
            return RefreshedPrices(
                prices={name: float(value["N"]) for name, value in item["prices"]["M"].items()},
                region=item["region"]["S"],
                fetched_at=parse_time(item["fetched_at"]["S"]),
            )
        except (KeyError, TypeError, ValueError):
            logger.warning("the #prices item is unreadable; the Price List layer is skipped")
            return None


class ConfiguredPriceSource:
    """The PriceSource port. Without `refreshed` (no table to read) the Price List layer is absent;
    without `region` there are no shipped defaults."""

    def __init__(
        self,
        config: ConfigSource,
        refreshed: DynamoRefreshedPrices | None = None,
        *,
        region: str | None = None,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._config = config
        self._refreshed = refreshed
        self._region = region
        self._clock = clock
        self._read: tuple[datetime, RefreshedPrices | None] | None = None
        """When the `#prices` item was last read, and what it held."""

    def load(self) -> Prices:
        return self.in_force().prices

    def in_force(self) -> PricesInForce:
        now = self._clock()
        configured = self._config.load().prices
        return prices_in_force(
            configured, self._refresh(now), default_prices(self._region), region=self._region, now=now
        )

    def _refresh(self, now: datetime) -> RefreshedPrices | None:
        if self._refreshed is None:
            return None
        if self._read is None or not timedelta(0) <= now - self._read[0] < REFRESH_READ_EVERY:
            self._read = (now, self._refreshed.load())
        return self._read[1]


def stack_price_source(settings: Settings, config: ConfigSource, dynamodb: Any) -> ConfiguredPriceSource:
    """The prices in force of a deployed stack (or the local one): every function that prices builds
    it this way, with its own ConfigSource and DynamoDB client."""
    return ConfiguredPriceSource(config, DynamoRefreshedPrices(settings.table_name, dynamodb), region=settings.region)
