"""Which layer prices each type: the configuration over a fresh refresh of the stack's region over
the shipped defaults; a type none prices stays unpriced."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.costs.costs import hourly_rate
from smq_lambda.domain.costs.default_prices import DEFAULT_PRICES, default_prices
from smq_lambda.domain.costs.prices_in_force import (
    REFRESH_MAX_AGE,
    PriceOrigin,
    PricesInForce,
    RefreshedPrices,
    prices_in_force,
)

NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)
REGION = "us-east-1"
CONFIGURED = {"ml.p5.48xlarge": 40.0}
DEFAULTS = {"ml.p5.48xlarge": 99.0, "ml.p3.2xlarge": 3.825, "ml.c5.9xlarge": 1.836}
LISTED = {"ml.p5.48xlarge": 55.0, "ml.p3.2xlarge": 3.0, "ml.g5.xlarge": 1.2}


def refresh(age: timedelta = timedelta(hours=3), region: str = REGION) -> RefreshedPrices:
    return RefreshedPrices(LISTED, region, NOW - age)


C, P, D = PriceOrigin.CONFIGURATION, PriceOrigin.PRICE_LIST, PriceOrigin.DEFAULTS


@pytest.mark.parametrize(
    ("case", "refreshed", "expected", "origins", "source"),
    [
        (
            "every layer",
            refresh(),
            {"ml.p5.48xlarge": 40.0, "ml.p3.2xlarge": 3.0, "ml.g5.xlarge": 1.2, "ml.c5.9xlarge": 1.836},
            {"ml.p5.48xlarge": C, "ml.p3.2xlarge": P, "ml.g5.xlarge": P, "ml.c5.9xlarge": D},
            "configuration+price-list+defaults",
        ),
        (
            "no refresh yet",
            None,
            {"ml.p5.48xlarge": 40.0, "ml.p3.2xlarge": 3.825, "ml.c5.9xlarge": 1.836},
            {"ml.p5.48xlarge": C, "ml.p3.2xlarge": D, "ml.c5.9xlarge": D},
            "configuration+defaults",
        ),
        (
            "a refresh exactly a week old still counts",
            refresh(REFRESH_MAX_AGE),
            {"ml.p5.48xlarge": 40.0, "ml.p3.2xlarge": 3.0, "ml.g5.xlarge": 1.2, "ml.c5.9xlarge": 1.836},
            {"ml.p5.48xlarge": C, "ml.p3.2xlarge": P, "ml.g5.xlarge": P, "ml.c5.9xlarge": D},
            "configuration+price-list+defaults",
        ),
        (
            "a refresh older than a week is ignored",
            refresh(REFRESH_MAX_AGE + timedelta(seconds=1)),
            {"ml.p5.48xlarge": 40.0, "ml.p3.2xlarge": 3.825, "ml.c5.9xlarge": 1.836},
            {"ml.p5.48xlarge": C, "ml.p3.2xlarge": D, "ml.c5.9xlarge": D},
            "configuration+defaults",
        ),
        (
            "a refresh of another region is ignored",
            refresh(region="us-west-2"),
            {"ml.p5.48xlarge": 40.0, "ml.p3.2xlarge": 3.825, "ml.c5.9xlarge": 1.836},
            {"ml.p5.48xlarge": C, "ml.p3.2xlarge": D, "ml.c5.9xlarge": D},
            "configuration+defaults",
        ),
    ],
)
def test_the_first_layer_that_prices_a_type_wins(
    case: str, refreshed: RefreshedPrices | None, expected: dict[str, float], origins: dict, source: str
) -> None:
    found = prices_in_force(CONFIGURED, refreshed, DEFAULTS, region=REGION, now=NOW)

    assert (dict(found.prices), dict(found.origins), found.source) == (expected, origins, source), case
    assert found.refreshed_at == (refreshed.fetched_at if P in origins.values() and refreshed else None), case


def test_nothing_priced_has_source_none_and_every_figure_stays_unpriced() -> None:
    found = prices_in_force({}, None, default_prices("eu-north-1"), region="eu-north-1", now=NOW)

    assert found == PricesInForce({}, {}, None)
    assert found.source == "none"
    assert hourly_rate({"ml.p4d.24xlarge": 1}, found.prices) is None


def test_shipped_defaults_are_positive_and_named_per_region() -> None:
    assert default_prices(None) == {} and default_prices("us-west-2") == {}
    for region, prices in DEFAULT_PRICES.items():
        assert prices, region
        for instance_type, price in prices.items():
            assert instance_type.startswith("ml.") and price > 0, (region, instance_type)


prices = st.dictionaries(st.sampled_from(["ml.a.x", "ml.b.x", "ml.c.x", "ml.d.x"]), st.floats(0, 10_000))


@given(prices, prices, prices, st.integers(0, 10 * 24))
def test_every_type_of_any_layer_is_priced_by_the_first_layer_that_has_it(
    configured: dict[str, float], listed: dict[str, float], defaults: dict[str, float], hours_old: int
) -> None:
    refreshed = RefreshedPrices(listed, REGION, NOW - timedelta(hours=hours_old))
    found = prices_in_force(configured, refreshed, defaults, region=REGION, now=NOW)
    layers = [configured, listed if timedelta(hours=hours_old) <= REFRESH_MAX_AGE else {}, defaults]

    assert set(found.prices) == set().union(*layers) == set(found.origins)
    for instance_type, price in found.prices.items():
        first = next(layer for layer in layers if instance_type in layer)
        assert price == first[instance_type]
