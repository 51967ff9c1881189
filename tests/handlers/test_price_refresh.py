"""The daily price refresh: the Price List's prices land in the `#prices` item; an answer with no
price, or a throttled Price List, leaves the last good refresh in force and fails the invocation."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from smq_lambda.adapters.price_list import SageMakerPriceList
from smq_lambda.adapters.price_source import DynamoRefreshedPrices
from smq_lambda.domain.costs.prices_in_force import RefreshedPrices
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.handlers.price_refresh import NoPricesFound, refresh

from tests.support.aws import REGION, create_queue_table, use_test_credentials
from tests.support.price_list import product, stubbed_price_list

NOW = datetime(2026, 11, 26, 6, tzinfo=UTC)
EARLIER = RefreshedPrices({"ml.p3.2xlarge": 3.825}, REGION, datetime(2026, 11, 25, 6, tzinfo=UTC))


@pytest.fixture
def stored(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoRefreshedPrices]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        refreshed = DynamoRefreshedPrices(create_queue_table(client), client)
        refreshed.save(EARLIER)
        yield refreshed


@pytest.fixture
def pricing() -> Iterator[tuple[SageMakerPriceList, Stubber]]:
    with stubbed_price_list() as stubbed:
        yield stubbed


def answer(stubber: Stubber, entries: list[str]) -> None:
    stubber.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": entries})


def test_the_price_lists_prices_replace_the_last_refresh(
    stored: DynamoRefreshedPrices, pricing: tuple[SageMakerPriceList, Stubber]
) -> None:
    price_list, stubber = pricing
    answer(stubber, [product("ml.p4d.24xlarge", "21.9600000000"), product("ml.p3.2xlarge", "3.0600000000")])

    saved = refresh(price_list, stored, REGION, lambda: NOW)

    expected = RefreshedPrices({"ml.p4d.24xlarge": 21.96, "ml.p3.2xlarge": 3.06}, REGION, NOW)
    assert saved == expected
    assert stored.load() == expected


def test_an_answer_with_no_price_keeps_the_last_refresh(
    stored: DynamoRefreshedPrices, pricing: tuple[SageMakerPriceList, Stubber]
) -> None:
    price_list, stubber = pricing
    answer(stubber, [product("ml.p4d.24xlarge", None)])

    with pytest.raises(NoPricesFound):
        refresh(price_list, stored, REGION, lambda: NOW)

    assert stored.load() == EARLIER


def test_a_throttled_price_list_keeps_the_last_refresh(
    stored: DynamoRefreshedPrices, pricing: tuple[SageMakerPriceList, Stubber]
) -> None:
    price_list, stubber = pricing
    stubber.add_client_error("get_products", "ThrottlingException", "Rate exceeded", 400)

    with pytest.raises(ServiceUnavailable):
        refresh(price_list, stored, REGION, lambda: NOW)

    assert stored.load() == EARLIER


def test_a_stack_without_a_region_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from smq_lambda.errors import ConfigError
    from smq_lambda.handlers import price_refresh

    environment: dict[str, Any] = {"SMQ_TABLE_NAME": "smq-queue", "SMQ_POOLS_PARAMETER": "/smq/pools"}
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    price_refresh.default_refresh.cache_clear()
    try:
        with pytest.raises(ConfigError):
            price_refresh.default_refresh()
    finally:
        price_refresh.default_refresh.cache_clear()


def test_the_local_stack_never_runs_the_price_refresh() -> None:
    """Locally only the scheduler's schedule fires (stack_triggers.py); no queue or topic the local
    stack consumes leads to the price refresh either."""
    from smq.local.template import load_template, sns_subscriptions, sqs_event_sources

    from tests.support.aws import TEMPLATE_PATH
    from tests.template.template_support import REQUIRED_PARAMETERS

    template = load_template(TEMPLATE_PATH)
    subscribed = sns_subscriptions(template, lambda logical_id, _: logical_id, parameter_overrides=REQUIRED_PARAMETERS)

    assert template["Resources"]["PriceRefreshFunction"]["Type"] == "AWS::Serverless::Function"
    assert [source.function for source in sqs_event_sources(template, parameter_overrides=REQUIRED_PARAMETERS)] == [
        "SchedulerFunction"
    ]
    assert {function for function, _, _ in subscribed} == {"IdleStopFunction"}
