"""Capacity pools from SSM through powertools Parameters, validated."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import SSMProvider
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from smq_lambda.adapters.ssm_config import SsmConfigSource
from smq_lambda.errors import ConfigError, ServiceUnavailable
from smq_lambda.scheduling.snapshot import SchedulerConfig, UnpooledPolicy
from smq_lambda.settings import Settings

from tests.adapters.builders import G5, P5
from tests.support.aws import REGION


@pytest.fixture
def provider(ssm_client: Any) -> SSMProvider:
    return SSMProvider(boto3_client=ssm_client)


@pytest.fixture
def parameter(ssm_client: Any) -> Any:
    """Writes a pools parameter under a fresh name and returns that name."""

    def write(value: str, name: str | None = None) -> str:
        name = name or f"/smq/test/{uuid.uuid4().hex}/capacity-pools"
        ssm_client.put_parameter(Name=name, Value=value, Type="String", Overwrite=True)
        return name

    return write


def settings(name: str, **overrides: Any) -> Settings:
    return Settings(table_name="unused", pools_parameter=name, **overrides)


def test_pools_come_from_ssm_and_the_rest_from_settings(provider: SSMProvider, parameter: Any) -> None:
    name = parameter(json.dumps({G5: 8, P5: 0}))

    config = SsmConfigSource(settings(name, unpooled=UnpooledPolicy.UNLIMITED, backfill=True), provider).load()

    assert config == SchedulerConfig(pools={G5: 8, P5: 0}, unpooled=UnpooledPolicy.UNLIMITED, backfill=True)


def test_an_operators_change_applies_once_the_cache_expires(provider: SSMProvider, parameter: Any) -> None:
    name = parameter(json.dumps({G5: 1}))
    source = SsmConfigSource(settings(name), provider)
    before = source.load()
    parameter(json.dumps({G5: 5}), name)

    cached = source.load()
    provider.clear_cache()
    after = source.load()

    assert before.pools == cached.pools == {G5: 1}
    assert after.pools == {G5: 5}


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("{not json", "not valid JSON"),
        ("[8]", "must be a JSON object"),
        ('"ml.g5.xlarge"', "must be a JSON object"),
        ("null", "must be a JSON object"),
        ('{"ml.g5.xlarge": -1}', "non-negative integer"),
        ('{"ml.g5.xlarge": 1.5}', "non-negative integer"),
        ('{"ml.g5.xlarge": "8"}', "non-negative integer"),
        ('{"ml.g5.xlarge": true}', "non-negative integer"),
        ('{" ": 2}', "instance type is empty"),
    ],
)
def test_a_malformed_parameter_is_a_config_error_that_says_what_is_wrong(
    provider: SSMProvider, parameter: Any, value: str, complaint: str
) -> None:
    name = parameter(value)

    with pytest.raises(ConfigError) as raised:
        SsmConfigSource(settings(name), provider).load()

    assert complaint in str(raised.value)
    assert name in str(raised.value)


def test_a_missing_parameter_is_a_config_error(provider: SSMProvider) -> None:
    with pytest.raises(ConfigError, match="could not be read"):
        SsmConfigSource(settings("/smq/test/missing"), provider).load()


class _Body:
    def __init__(self, payload: bytes) -> None:
        self._payload = payload

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._payload


def flaky_provider(answer: Callable[[Any], AWSResponse]) -> SSMProvider:
    """A provider whose SSM client gets `answer(request)` (or its exception) for its one attempt."""
    client = boto3.client(
        "ssm",
        region_name=REGION,
        endpoint_url="https://ssm.flaky.invalid",
        config=Config(retries={"total_max_attempts": 1}),
    )
    client.meta.events.register_first("before-send.ssm", lambda request, **_: answer(request))
    return SSMProvider(boto3_client=client)


def refused(code: str) -> Callable[[Any], AWSResponse]:
    body = json.dumps({"__type": code, "message": f"injected {code}"}).encode()
    return lambda request: AWSResponse(request.url, 400, {"x-amzn-RequestId": "flaky"}, _Body(body))


def failing(error: type[BotoCoreError]) -> Callable[[Any], AWSResponse]:
    def answer(request: Any) -> AWSResponse:
        raise error(endpoint_url=request.url, error="injected")

    return answer


TRANSPORT_FAILURES = (ReadTimeoutError, ConnectionClosedError, EndpointConnectionError, ConnectTimeoutError)
UNAVAILABLE = [
    *[pytest.param(failing(error), error.__name__, id=error.__name__) for error in TRANSPORT_FAILURES],
    *[pytest.param(refused(code), code, id=code) for code in ("ThrottlingException", "InternalServerError")],
]


@pytest.mark.parametrize(("answer", "code"), UNAVAILABLE)
def test_ssm_throttled_or_unreachable_is_unavailable_not_misconfigured(
    answer: Callable[[Any], AWSResponse], code: str
) -> None:
    """It passes: the API answers 503 with Retry-After, not a 500 blaming the configuration."""
    with pytest.raises(ServiceUnavailable) as unavailable:
        SsmConfigSource(settings("/smq/test/pools"), flaky_provider(answer)).load()

    assert (unavailable.value.service, unavailable.value.code) == ("SSM", code)


@pytest.mark.parametrize("code", ["ParameterNotFound", "AccessDeniedException", "InvalidKeyId"])
def test_a_parameter_an_operator_must_fix_is_a_config_error(code: str) -> None:
    with pytest.raises(ConfigError, match="/smq/test/pools could not be read"):
        SsmConfigSource(settings("/smq/test/pools"), flaky_provider(refused(code))).load()
