"""Price refresh Lambda: once a day (the template's schedule), reads the stack region's on-demand
SageMaker training prices from the AWS Price List and writes them to the queue table's `#prices`
item, where every function that prices finds them (adapters/price_source.py).

A Price List that answers no price at all (a changed filter, an outage that answers empty) writes
nothing and fails the invocation, so the last good refresh stays in force (for a week, then the
shipped defaults) and the failure lands in the dead-letter queue after Lambda's retries. The local
stack has no Price List and never runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from smq_lambda.adapters.price_list import SageMakerPriceList
from smq_lambda.adapters.price_source import DynamoRefreshedPrices
from smq_lambda.domain.costs.prices_in_force import RefreshedPrices
from smq_lambda.handlers.composition import default_refresh
from smq_lambda.handlers.tracing import traced

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger(service="smq")


class NoPricesFound(Exception):
    """The Price List answered without one training price for the region."""


def _now() -> datetime:
    return datetime.now(UTC)


@traced
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    price_list, refreshed, region = default_refresh()
    saved = refresh(price_list, refreshed, region, _now)
    return {"region": saved.region, "prices": len(saved.prices), "fetched_at": saved.fetched_at.isoformat()}


def refresh(
    price_list: SageMakerPriceList, refreshed: DynamoRefreshedPrices, region: str, clock: Callable[[], datetime]
) -> RefreshedPrices:
    """Read `region`'s training prices and save them; raises NoPricesFound when there are none."""
    fetched_at = clock()
    prices = price_list.training_prices(region)
    if not prices:
        raise NoPricesFound(f"the Price List has no SageMaker training price for {region}; the last refresh stays")
    saved = RefreshedPrices(prices=prices, region=region, fetched_at=fetched_at)
    refreshed.save(saved)
    logger.info("prices refreshed", extra={"region": region, "instance_types": len(prices)})
    return saved
