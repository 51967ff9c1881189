"""The Price List adapter on GetProducts' documented answers (botocore's Stubber checks each request
against the pricing service model): the request it sends, pages, and the entries it keeps or skips."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.price_list import SageMakerPriceList
from smq_lambda.errors import ServiceUnavailable

from tests.support.price_list import REGION, product, stubbed_price_list

FILTERS = [
    {"Type": "TERM_MATCH", "Field": "productFamily", "Value": "ML Instance"},
    {"Type": "TERM_MATCH", "Field": "regionCode", "Value": REGION},
    {"Type": "TERM_MATCH", "Field": "platoinstancetype", "Value": "Training"},
]


def request(next_token: str | None = None) -> dict[str, Any]:
    expected: dict[str, Any] = {
        "ServiceCode": "AmazonSageMaker",
        "Filters": FILTERS,
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
    }
    if next_token is not None:
        expected["NextToken"] = next_token
    return expected


@pytest.fixture
def stubbed() -> Iterator[tuple[SageMakerPriceList, Stubber]]:
    with stubbed_price_list() as (price_list, stubber):
        yield price_list, stubber
        stubber.assert_no_pending_responses()


def answer(stubber: Stubber, entries: list[str], *, next_token: str | None = None, after: str | None = None) -> None:
    response: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": entries}
    if next_token is not None:
        response["NextToken"] = next_token
    stubber.add_response("get_products", response, request(after))


def test_every_page_is_read_and_each_training_type_priced(stubbed: tuple[SageMakerPriceList, Stubber]) -> None:
    price_list, stubber = stubbed
    answer(stubber, [product("ml.p4d.24xlarge"), product("ml.p3.2xlarge", "3.8250000000")], next_token="page-2")
    answer(stubber, [product("ml.g5.2xlarge", "1.5150000000")], after="page-2")

    prices = price_list.training_prices(REGION)

    assert prices == {"ml.p4d.24xlarge": 37.688, "ml.p3.2xlarge": 3.825, "ml.g5.2xlarge": 1.515}


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (product("ml.g6.xlarge", None), "no price at all"),
        (product("ml.g6.xlarge", "10.2000000000", currency="CNY"), "no USD price"),
        (product("ml.g6.xlarge", "0.0000000000"), "a $0 placeholder"),
        (product("ml.g6.xlarge", "0.9800000000", unit="Quantity"), "not per hour"),
        (product("ml.g6.xlarge", "not a number"), "a price that is not a number"),
        (product("ml.g6.xlarge", "NaN"), "a price that is not finite"),
        (product("ml.g6.xlarge", region="us-west-2"), "another region"),
        (product("ml.g6.xlarge", component="SpotTraining"), "another component"),
        ("{not json", "not JSON"),
        (json.dumps({"product": {"attributes": {}}, "terms": {}}), "no instance name"),
        (json.dumps({"terms": {"OnDemand": {}}}), "no product"),
        (json.dumps({"product": {"attributes": {"instanceName": "ml.g6.xlarge"}}, "terms": []}), "terms not a map"),
        (json.dumps([1, 2]), "not an object"),
    ],
)
def test_an_entry_without_one_usable_price_is_skipped_and_the_rest_kept(
    stubbed: tuple[SageMakerPriceList, Stubber], entry: str, why: str
) -> None:
    price_list, stubber = stubbed
    answer(stubber, [entry, product("ml.p3.2xlarge", "3.8250000000")])

    assert price_list.training_prices(REGION) == {"ml.p3.2xlarge": 3.825}, why


def test_a_type_priced_twice_at_different_rates_is_left_unpriced_and_at_one_rate_kept(
    stubbed: tuple[SageMakerPriceList, Stubber],
) -> None:
    price_list, stubber = stubbed
    answer(stubber, [product("ml.p5.48xlarge", "55.0400000000"), product("ml.p5.48xlarge", "98.3200000000")])
    answer(stubber, [product("ml.p3.2xlarge", "3.8250000000"), product("ml.p3.2xlarge", "3.8250000000")])

    assert price_list.training_prices(REGION) == {}
    assert price_list.training_prices(REGION) == {"ml.p3.2xlarge": 3.825}


@pytest.mark.parametrize("code", ["ThrottlingException", "InternalErrorException"])
def test_throttling_and_outages_are_service_unavailable(stubbed: tuple[SageMakerPriceList, Stubber], code: str) -> None:
    price_list, stubber = stubbed
    answer(stubber, [product("ml.p3.2xlarge")], next_token="page-2")
    stubber.add_client_error("get_products", code, "Rate exceeded", 400, expected_params=request("page-2"))

    with pytest.raises(ServiceUnavailable) as raised:
        price_list.training_prices(REGION)

    assert (raised.value.service, raised.value.code) == ("Price List", code)


def test_a_missing_permission_is_raised_as_it_is(stubbed: tuple[SageMakerPriceList, Stubber]) -> None:
    price_list, stubber = stubbed
    stubber.add_client_error("get_products", "AccessDeniedException", "not authorized", 400, expected_params=request())

    with pytest.raises(Exception) as raised:
        price_list.training_prices(REGION)

    assert not isinstance(raised.value, ServiceUnavailable)
    assert "AccessDeniedException" in str(raised.value)
