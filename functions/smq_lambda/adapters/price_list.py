"""SageMaker training prices from the AWS Price List Query API (`pricing:GetProducts`).

The Price List API has endpoints in only a few regions (us-east-1, eu-central-1, ap-south-1), and
each answers for every region; the caller builds the client for one of them (PRICING_ENDPOINT).

One query per refresh, paged (at most 100 products a page): ServiceCode AmazonSageMaker, filtered
by TERM_MATCH on the product family `ML Instance`, the region (`regionCode`) and SageMaker's
component `platoinstancetype` = `Training` (on-demand training; spot training, hosting, processing
and the others are other components). Each `PriceList` entry is a JSON *string*:

    {"product": {"productFamily": "ML Instance", "sku": "...",
                 "attributes": {"instanceName": "ml.p4d.24xlarge", "regionCode": "us-east-1",
                                "platoinstancetype": "Training",
                                "usagetype": "USE1-Train:ml.p4d.24xlarge", ...}},
     "terms": {"OnDemand": {"<sku>.<offer term>": {"priceDimensions": {"<rate code>": {
         "unit": "Hrs", "pricePerUnit": {"USD": "37.6880000000"}, ...}}}}}, ...}

An entry that is not JSON or lacks these, a product with no positive USD hourly price (another
currency, a $0 placeholder), or a type priced twice at different rates is left out and logged:
the type then stays unpriced rather than priced wrong.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from smq_lambda.errors import ServiceUnavailable

logger = Logger(service="smq", child=True)

PRICING_ENDPOINT = "us-east-1"
"""Where the Price List API is called from every stack (it answers for all regions)."""
SERVICE = "Price List"
SERVICE_CODE = "AmazonSageMaker"
TRAINING_COMPONENT = "Training"
UNAVAILABLE_CODES = frozenset({"ThrottlingException", "InternalErrorException", "ServiceUnavailable"})
"""Price List error codes that mean "not now" (ServiceUnavailable); every other code is raised as
it is (AccessDeniedException: the role lacks pricing:GetProducts)."""


class SageMakerPriceList:
    def __init__(self, client: Any, *, page_size: int = 100) -> None:
        self._client = client
        self._page_size = page_size

    def training_prices(self, region: str) -> dict[str, float]:
        """On-demand training $ per instance-hour by instance type in `region`. Raises
        ServiceUnavailable when the Price List throttles or fails on its side."""
        prices: dict[str, float] = {}
        conflicting: set[str] = set()
        for entry in self._entries(region):
            found = _training_price(entry, region)
            if found is None:
                continue
            instance_type, price = found
            if instance_type in prices and prices[instance_type] != price:
                conflicting.add(instance_type)
            prices.setdefault(instance_type, price)
        if conflicting:
            logger.warning("Price List entries disagree; left unpriced", extra={"instance_types": sorted(conflicting)})
        return {instance_type: price for instance_type, price in prices.items() if instance_type not in conflicting}

    def _entries(self, region: str) -> Iterator[Any]:
        filters = [
            {"Type": "TERM_MATCH", "Field": "productFamily", "Value": "ML Instance"},
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
            {"Type": "TERM_MATCH", "Field": "platoinstancetype", "Value": TRAINING_COMPONENT},
        ]
        pages = self._client.get_paginator("get_products").paginate(
            ServiceCode=SERVICE_CODE,
            Filters=filters,
            FormatVersion="aws_v1",
            PaginationConfig={"PageSize": self._page_size},
        )
        try:
            for page in pages:
                yield from page.get("PriceList", [])
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code") or "Unknown")
            if code in UNAVAILABLE_CODES:
                raise ServiceUnavailable(SERVICE, code, str(error.get("Message") or "")) from exc
            raise
        except BotoCoreError as exc:
            raise ServiceUnavailable(SERVICE, type(exc).__name__, str(exc)) from exc


def _training_price(entry: Any, region: str) -> tuple[str, float] | None:
    """(instance type, $/hour) of one PriceList entry, or None (logged) when it has none."""
    try:
        document = json.loads(entry)
        product = document["product"]
        attributes = product["attributes"]
        instance_type = attributes["instanceName"]
        hourly = set(_hourly_usd(document["terms"].get("OnDemand") or {}))
    except (TypeError, ValueError, KeyError, AttributeError):
        logger.warning("malformed Price List entry skipped", extra={"entry": str(entry)[:200]})
        return None
    if attributes.get("regionCode") != region or attributes.get("platoinstancetype") != TRAINING_COMPONENT:
        logger.warning("Price List entry of another region or component skipped", extra={"sku": product.get("sku")})
        return None
    if len(hourly) != 1:
        logger.warning(
            "Price List entry without one positive USD hourly price skipped",
            extra={"sku": product.get("sku"), "instance_type": instance_type, "prices": sorted(hourly)},
        )
        return None
    return str(instance_type), hourly.pop()


def _hourly_usd(on_demand: Mapping[str, Any]) -> Iterator[float]:
    """Every positive USD price per hour among the on-demand terms' price dimensions."""
    for term in on_demand.values():
        for dimension in (term.get("priceDimensions") or {}).values():
            usd = (dimension.get("pricePerUnit") or {}).get("USD")
            if dimension.get("unit") != "Hrs" or usd is None:
                continue
            try:
                price = float(usd)
            except (TypeError, ValueError):
                continue
            if math.isfinite(price) and price > 0:
                yield price
