"""The configuration document's `spot` section: spot pools counted apart as `<type>:spot`, the
on-demand wait and the adaptive rate, every refusal naming its key path."""

from __future__ import annotations

from typing import Any

import pytest
from smq_lambda.domain.config.config_document import ConfigDocumentError, parse_config_document
from smq_lambda.domain.config.spot_document import DEFAULT_HALF_LIFE_S, AdaptiveSpot, SpotSection

G5 = "ml.g5.xlarge"
P5 = "ml.p5.48xlarge"


def document(**spot: Any) -> dict[str, Any]:
    return {"pools": {G5: 2, P5: 1}, "spot": spot}


def test_the_spot_section_is_read_and_its_pools_join_the_pools() -> None:
    parsed = parse_config_document(
        document(
            pools={G5: 4}, on_demand_after_s=1800, adaptive={"max_interruptions_per_hour": 0.5, "half_life_s": 600}
        ),
        source="doc",
    )
    assert parsed.pools == {G5: 2, P5: 1, "ml.g5.xlarge:spot": 4}
    assert parsed.spot == SpotSection(pools={G5: 4}, on_demand_after_s=1800, adaptive=AdaptiveSpot(0.5, 600))


def test_the_defaults() -> None:
    parsed = parse_config_document(document(adaptive={"max_interruptions_per_hour": 1}), source="doc")
    assert parsed.spot == SpotSection(pools={}, on_demand_after_s=None, adaptive=AdaptiveSpot(1.0, DEFAULT_HALF_LIFE_S))
    assert parse_config_document({"pools": {G5: 2}}, source="doc").spot is None


def test_a_quota_may_name_a_spot_pool() -> None:
    value = {**document(pools={G5: 4}), "quotas": {"vision": {"instances": {"ml.g5.xlarge:spot": 4}}}}
    assert parse_config_document(value, source="doc").teams.quotas["vision"].instances == {"ml.g5.xlarge:spot": 4}


REFUSALS = [
    ({"pools": {G5: 2}, "spot": []}, "spot", "must be a JSON object"),
    (document(pool={G5: 1}), "spot.pool", "unknown key; spot has pools, on_demand_after_s, adaptive"),
    (document(pools=[G5]), "spot.pools", "must be a JSON object"),
    (document(pools={"ml.m5.xlarge": 1}), "spot.pools.ml.m5.xlarge", "must be declared in pools too"),
    (document(pools={G5: -1}), "spot.pools.ml.g5.xlarge", "non-negative integer"),
    (document(pools={G5: 1.5}), "spot.pools.ml.g5.xlarge", "not 1.5"),
    (document(pools={G5: 100_001}), "spot.pools.ml.g5.xlarge", "at most 100000 instances"),
    (document(on_demand_after_s=-1), "spot.on_demand_after_s", "non-negative integer"),
    (document(on_demand_after_s="1800"), "spot.on_demand_after_s", "not '1800'"),
    (document(on_demand_after_s=10**9), "spot.on_demand_after_s", "at most 315360000 seconds"),
    (document(adaptive=0.5), "spot.adaptive", "must be a JSON object"),
    (document(adaptive={}), "spot.adaptive.max_interruptions_per_hour", "is required"),
    (document(adaptive={"max_interruptions_per_hour": -0.1}), "spot.adaptive.max_interruptions_per_hour", "from 0"),
    (document(adaptive={"max_interruptions_per_hour": True}), "spot.adaptive.max_interruptions_per_hour", "not True"),
    (document(adaptive={"max_interruptions_per_hour": 2e6}), "spot.adaptive.max_interruptions_per_hour", "not 2000000.0"),
    (document(adaptive={"max_interruptions_per_hour": 1, "half_life_s": 0}), "spot.adaptive.half_life_s", "at least 1"),
    (document(adaptive={"max_interruptions_per_hour": 1, "rate": 1}), "spot.adaptive.rate", "unknown key"),
    ({"pools": {"ml.g5.xlarge:spot": 2}}, "pools.ml.g5.xlarge:spot", "declared in spot.pools"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "path", "complaint"), REFUSALS)
def test_a_malformed_spot_section_is_refused_naming_the_key(value: dict[str, Any], path: str, complaint: str) -> None:
    with pytest.raises(ConfigDocumentError) as raised:
        parse_config_document(value, source="doc")

    assert raised.value.path == path
    assert complaint in raised.value.problem
