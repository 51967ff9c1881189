"""GetProducts' PriceList entries as the AWS Price List API answers them for SageMaker (aws_v1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.stub import Stubber
from smq_lambda.adapters.price_list import PRICING_ENDPOINT, SageMakerPriceList

REGION = "us-east-1"


def product(
    instance_type: str,
    usd: str | None = "37.6880000000",
    *,
    region: str = REGION,
    component: str = "Training",
    unit: str = "Hrs",
    currency: str = "USD",
) -> str:
    """One PriceList entry as GetProducts answers it: a JSON string (aws_v1 format)."""
    sku = f"SKU-{instance_type}-{region}-{component}"
    dimension: dict[str, Any] = {
        "unit": unit,
        "endRange": "Inf",
        "description": f"${usd} per hour for {component} on {instance_type} in US East (N. Virginia)",
        "appliesTo": [],
        "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
        "beginRange": "0",
        "pricePerUnit": {} if usd is None else {currency: usd},
    }
    return json.dumps(
        {
            "product": {
                "productFamily": "ML Instance",
                "attributes": {
                    "computeType": "GPU",
                    "usagetype": f"USE1-Train:{instance_type}",
                    "locationType": "AWS Region",
                    "instanceName": instance_type,
                    "instanceType": f"{instance_type}-{component}",
                    "regionCode": region,
                    "servicecode": "AmazonSageMaker",
                    "location": "US East (N. Virginia)",
                    "platoinstancetype": component,
                    "component": component,
                    "servicename": "Amazon SageMaker",
                    "operation": "RunInstance",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonSageMaker",
            "terms": {
                "OnDemand": {
                    f"{sku}.JRTCKXETXF": {
                        "priceDimensions": {dimension["rateCode"]: dimension},
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


@contextmanager
def stubbed_price_list() -> Iterator[tuple[SageMakerPriceList, Stubber]]:
    """The Price List adapter over a pricing client whose answers the test stubs (botocore checks
    every stubbed request and response against the service model)."""
    client = boto3.client(
        "pricing", region_name=PRICING_ENDPOINT, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with Stubber(client) as stubber:
        yield SageMakerPriceList(client), stubber
