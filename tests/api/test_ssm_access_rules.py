"""Access rules from SSM: hot-reloaded; while they are invalid, their newest valid version, or with
none the fallback rules, in every instance alike; 503 while SSM is not there."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import SSMProvider
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from moto import mock_aws
from smq_lambda.adapters.ssm_access_rules import SsmAccessRules
from smq_lambda.domain.access.access import FALLBACK, AccessRule
from smq_lambda.errors import ServiceUnavailable

from tests.support.aws import REGION, use_test_credentials

PARAMETER = "/smq/test/access-rules"
FALLBACK_IN_FORCE = "no version of it is valid, so the fallback rules"


@pytest.fixture
def ssm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        yield boto3.client("ssm")


def put(ssm: Any, value: object) -> None:
    text = value if isinstance(value, str) else json.dumps(value)
    ssm.put_parameter(Name=PARAMETER, Value=text, Type="String", Overwrite=True)


def complaints(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What each logged complaint says is in force."""
    return [str(getattr(record, "in_force", "")) for record in caplog.records if record.levelno == logging.ERROR]


def test_the_rules_come_from_ssm_and_follow_an_operators_change(ssm: Any) -> None:
    put(ssm, {"default": {"max_priority": 10}})
    provider = SSMProvider(boto3_client=ssm)
    source = SsmAccessRules(PARAMETER, provider)
    assert source.load().default == AccessRule(name="default", max_priority=10)

    put(ssm, {"default": {"max_priority": 20}})
    cached = source.load()
    provider.clear_cache()  # what 30 seconds do

    assert cached.default.max_priority == 10
    assert source.load().default.max_priority == 20


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ("[" * 4000, "is not valid JSON"),
        ({"default": {"max_priority": "high"}}, "default.max_priority must be an integer"),
        ({"rules": [{"principals": ["arn:aws:iam::123456789012:role/teams/*"]}]}, "has a path and a wildcard"),
    ],
)
def test_invalid_rules_with_no_valid_version_put_the_fallback_in_force_and_are_logged_once(
    ssm: Any, caplog: pytest.LogCaptureFixture, value: object, problem: str
) -> None:
    caplog.set_level(logging.ERROR)
    put(ssm, value)
    source = SsmAccessRules(PARAMETER, SSMProvider(boto3_client=ssm))

    loads = [source.load(), source.load()]

    assert loads == [FALLBACK, FALLBACK]
    (in_force,) = complaints(caplog)
    assert in_force.startswith(FALLBACK_IN_FORCE)
    assert any(problem in str(getattr(record, "problem", "")) for record in caplog.records)


def test_fixed_rules_replace_the_fallback(ssm: Any) -> None:
    put(ssm, "{not json")
    provider = SSMProvider(boto3_client=ssm)
    source = SsmAccessRules(PARAMETER, provider)
    assert source.load() == FALLBACK

    put(ssm, {"default": {"max_priority": 3}})
    provider.clear_cache()

    assert source.load().default.max_priority == 3


def test_a_missing_parameter_puts_the_fallback_in_force(ssm: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)

    assert SsmAccessRules("/smq/test/missing", SSMProvider(boto3_client=ssm)).load() == FALLBACK
    (in_force,) = complaints(caplog)
    assert in_force.startswith(FALLBACK_IN_FORCE)


def test_a_cold_start_that_reads_broken_rules_uses_their_newest_valid_version(
    ssm: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Every instance, warm or cold, enforces what the parameter's history says: the rules an
    operator last wrote correctly, not the fallback in one instance and those rules in another."""
    caplog.set_level(logging.ERROR)
    put(ssm, {"default": {"max_priority": 10}})
    provider = SSMProvider(boto3_client=ssm)
    warm = SsmAccessRules(PARAMETER, provider)
    assert warm.load().default.max_priority == 10
    put(ssm, {"default": {"max_priority": 50}})
    put(ssm, {"default": {"max_priority": "high"}})
    provider.clear_cache()  # what 30 seconds do

    cold = SsmAccessRules(PARAMETER, SSMProvider(boto3_client=ssm))

    assert cold.load().default.max_priority == warm.load().default.max_priority == 50
    assert complaints(caplog) == ["version 2 of the parameter, the newest valid one,"] * 2


def test_ssm_throttling_is_unavailable_not_the_fallback() -> None:
    client = boto3.client("ssm", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    with Stubber(client) as stub:
        stub.add_client_error("get_parameter", service_error_code="ThrottlingException", http_status_code=400)

        with pytest.raises(ServiceUnavailable) as unavailable:
            SsmAccessRules(PARAMETER, SSMProvider(boto3_client=client)).load()

    assert (unavailable.value.service, unavailable.value.code) == ("SSM", "ThrottlingException")


def test_ssm_out_of_reach_is_unavailable() -> None:
    client = boto3.client(
        "ssm",
        region_name=REGION,
        endpoint_url="https://ssm.unreachable.invalid",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )

    def unreachable(request: Any, **_: Any) -> None:
        raise EndpointConnectionError(endpoint_url=request.url)

    client.meta.events.register_first("before-send.ssm", unreachable)

    with pytest.raises(ServiceUnavailable) as unavailable:
        SsmAccessRules(PARAMETER, SSMProvider(boto3_client=client)).load()

    assert unavailable.value.code == "EndpointConnectionError"
