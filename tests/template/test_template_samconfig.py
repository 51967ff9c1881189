"""samconfig.toml deploys template.yaml once the placeholders are filled in: every parameter it
sets exists and is valid, and every parameter without a default is set."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import pytest

from tests.template.template_support import ROOT


def parse_override(item: str) -> tuple[str, str]:
    """`Key=Value` as `sam deploy` reads it, a value wrapped in quotes unwrapped."""
    key, raw = item.split("=", 1)
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        raw = raw[1:-1]
    return key, raw


@pytest.fixture(scope="module")
def deploy() -> dict[str, Any]:
    with open(ROOT / "samconfig.toml", "rb") as stream:
        config = tomllib.load(stream)
    assert config["version"] == 0.1
    return {**config["default"]["global"]["parameters"], **config["default"]["deploy"]["parameters"]}


@pytest.fixture(scope="module")
def overrides(deploy: dict[str, Any]) -> dict[str, str]:
    return dict(parse_override(item) for item in deploy["parameter_overrides"])


def test_default_environment(deploy: dict[str, Any]) -> None:
    assert deploy["stack_name"] == "smq"
    assert re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", deploy["region"])
    assert deploy["capabilities"] == "CAPABILITY_IAM"
    assert deploy["resolve_s3"] is True


def test_overrides_name_template_parameters_with_valid_values(
    template: dict[str, Any], overrides: dict[str, str]
) -> None:
    parameters = template["Parameters"]
    assert set(overrides) <= set(parameters)
    assert {name for name, p in parameters.items() if "Default" not in p} <= set(overrides)
    for name, raw in overrides.items():
        declaration = parameters[name]
        if "AllowedValues" in declaration:
            assert raw in declaration["AllowedValues"], name
        if "AllowedPattern" in declaration:
            assert re.fullmatch(declaration["AllowedPattern"], raw), name


@pytest.mark.parametrize("source", ["samconfig", "template default"])
def test_capacity_pools_are_a_json_object_of_positive_counts(
    template: dict[str, Any], overrides: dict[str, str], source: str
) -> None:
    raw = overrides["CapacityPools"] if source == "samconfig" else template["Parameters"]["CapacityPools"]["Default"]
    pools = json.loads(raw)
    assert pools and all(
        pool.startswith("ml.") and isinstance(count, int) and count > 0 for pool, count in pools.items()
    )
