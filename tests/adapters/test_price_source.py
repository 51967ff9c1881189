"""The prices in force over moto: the `#prices` item the daily refresh writes, read at most every
few minutes per container, under the configuration document's prices and over the shipped defaults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.price_source import (
    PRICES_KEY,
    REFRESH_READ_EVERY,
    ConfiguredPriceSource,
    DynamoRefreshedPrices,
    stack_price_source,
)
from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.domain.costs.prices_in_force import PriceOrigin, RefreshedPrices
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.settings import Settings

NOW = datetime(2026, 11, 26, 6, tzinfo=UTC)
REFRESHED = RefreshedPrices(
    {"ml.p3.2xlarge": 3.06, "ml.g5.xlarge": 1.4084, "ml.trn1.32xlarge": 24.7179}, "us-east-1", NOW
)


class Config:
    """A ConfigSource over a document with `prices`."""

    def __init__(self, prices: dict[str, float]) -> None:
        self.prices = prices

    def load(self) -> SchedulerConfig:
        document = parse_config_document({"pools": {"ml.p3.2xlarge": 2}, "prices": self.prices}, source="test")
        return SchedulerConfig.of(document)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def test_the_refresh_item_reads_back_as_saved_and_is_in_no_index(table: str, dynamodb_client: Any) -> None:
    refreshed = DynamoRefreshedPrices(table, dynamodb_client)
    assert refreshed.load() is None

    refreshed.save(REFRESHED)

    assert refreshed.load() == REFRESHED
    store = DynamoJobStore(table, dynamodb_client)
    assert store.list_jobs(states=list(JobState)).jobs == []


def test_an_unreadable_item_skips_the_price_list_layer(table: str, dynamodb_client: Any) -> None:
    dynamodb_client.put_item(TableName=table, Item={**PRICES_KEY, "region": {"S": "us-east-1"}})

    assert DynamoRefreshedPrices(table, dynamodb_client).load() is None


def test_configuration_over_refresh_over_defaults(table: str, dynamodb_client: Any) -> None:
    DynamoRefreshedPrices(table, dynamodb_client).save(REFRESHED)
    config = Config({"ml.p3.2xlarge": 2.5})
    source = ConfiguredPriceSource(
        config, DynamoRefreshedPrices(table, dynamodb_client), region="us-east-1", clock=Clock()
    )

    found = source.in_force()

    assert found.prices == {
        "ml.p3.2xlarge": 2.5,
        "ml.g5.xlarge": 1.4084,
        "ml.trn1.32xlarge": 24.7179,
        "ml.p4d.24xlarge": 37.688,
        "ml.c5.9xlarge": 1.836,
        "ml.c5.18xlarge": 3.672,
        "ml.g5.2xlarge": 1.515,
        "ml.m5.large": 0.115,
    }
    assert found.origins["ml.p3.2xlarge"] is PriceOrigin.CONFIGURATION
    assert found.origins["ml.g5.xlarge"] is PriceOrigin.PRICE_LIST
    assert found.origins["ml.p4d.24xlarge"] is PriceOrigin.DEFAULTS
    assert (found.source, found.refreshed_at) == ("configuration+price-list+defaults", NOW)
    assert source.load() == found.prices


def test_the_item_is_read_once_per_interval_and_a_configuration_change_applies_at_once(
    table: str, dynamodb_client: Any
) -> None:
    clock, config = Clock(), Config({})
    reads: list[str] = []
    dynamodb_client.meta.events.register("before-call.dynamodb.GetItem", lambda **_: reads.append("GetItem"))
    source = ConfiguredPriceSource(
        config, DynamoRefreshedPrices(table, dynamodb_client), region="us-east-1", clock=clock
    )
    try:
        assert "ml.g5.xlarge" not in source.load()
        DynamoRefreshedPrices(table, dynamodb_client).save(REFRESHED)
        config.prices = {"ml.g5.xlarge": 1.0}
        clock.now += REFRESH_READ_EVERY - timedelta(seconds=1)

        assert source.load()["ml.g5.xlarge"] == 1.0
        assert "ml.trn1.32xlarge" not in source.load()
        read_before = len(reads)
        clock.now += timedelta(seconds=1)

        assert source.load()["ml.trn1.32xlarge"] == 24.7179
        assert (read_before, len(reads)) == (1, 2)
    finally:
        dynamodb_client.meta.events.unregister("before-call.dynamodb.GetItem")


def test_a_stale_refresh_gives_way_to_the_defaults(table: str, dynamodb_client: Any) -> None:
    DynamoRefreshedPrices(table, dynamodb_client).save(REFRESHED)
    clock = Clock()
    clock.now += timedelta(days=8)
    source = ConfiguredPriceSource(
        Config({}), DynamoRefreshedPrices(table, dynamodb_client), region="us-east-1", clock=clock
    )

    found = source.in_force()

    assert found.source == "defaults" and found.prices["ml.p3.2xlarge"] == 3.825
    assert "ml.trn1.32xlarge" not in found.prices


def test_a_throttled_table_is_service_unavailable_never_the_defaults(table: str, dynamodb_client: Any) -> None:
    source = ConfiguredPriceSource(Config({}), DynamoRefreshedPrices(table, dynamodb_client), region="us-east-1")
    with Stubber(dynamodb_client) as stubber:
        stubber.add_client_error("get_item", "ProvisionedThroughputExceededException", "slow down", 400)

        with pytest.raises(ServiceUnavailable):
            source.load()


def test_the_stack_builds_it_from_its_settings(table: str, dynamodb_client: Any) -> None:
    """With the real clock: the refresh was just fetched."""
    just_now = RefreshedPrices(REFRESHED.prices, "us-east-1", datetime.now(UTC))
    DynamoRefreshedPrices(table, dynamodb_client).save(just_now)
    settings = Settings(table_name=table, pools_parameter="/smq/pools", region="us-east-1")

    found = stack_price_source(settings, Config({}), dynamodb_client).in_force()

    assert found.source == "price-list+defaults"
    assert found.prices["ml.trn1.32xlarge"] == 24.7179
