"""The governance policy from SSM (moto): hot-reloaded; an invalid document is logged and counted in
`InvalidPolicy` once per value, and the last good policy (or, before any, the default) stays in force."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import SSMProvider
from botocore.stub import Stubber
from moto import mock_aws
from smq_lambda.adapters.ssm_policy import SsmPolicySource
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.governance.policy import Policy

from tests.support.aws import REGION, use_test_credentials

PARAMETER = "/smq/test/policy"
GOOD = {"required_tags": ["project"], "max_instance_count": 4}
GOOD_POLICY = Policy(required_tags=("project",), max_instance_count=4)


@pytest.fixture
def ssm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        yield boto3.client("ssm")


@pytest.fixture
def provider(ssm: Any) -> SSMProvider:
    return SSMProvider(boto3_client=ssm)


def put(ssm: Any, value: object) -> None:
    text = value if isinstance(value, str) else json.dumps(value)
    ssm.put_parameter(Name=PARAMETER, Value=text, Type="String", Overwrite=True)


def invalid_policy_metrics(capsys: pytest.CaptureFixture[str]) -> int:
    """InvalidPolicy metrics written (EMF lines on stdout) since the last call."""
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    return sum(1 for line in lines if "InvalidPolicy" in line)


def test_the_policy_comes_from_ssm_and_follows_an_operators_change(ssm: Any, provider: SSMProvider) -> None:
    put(ssm, GOOD)
    source = SsmPolicySource(PARAMETER, provider)
    assert source.load() == GOOD_POLICY

    put(ssm, {"required_tags": []})
    cached = source.load()
    provider.clear_cache()  # what 30 seconds do

    assert cached == GOOD_POLICY
    assert source.load() == Policy()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ("[" * 4000, "is not valid JSON"),
        ({"required_tag": ["project"]}, "policy.required_tag: is not a policy key"),
        ({"idle": {"period_seconds": 90}}, "policy.idle.period_seconds"),
        ([], "policy: must be a JSON object"),
    ],
)
def test_an_invalid_first_document_keeps_the_default_and_is_reported_once(
    ssm: Any,
    provider: SSMProvider,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    value: object,
    problem: str,
) -> None:
    caplog.set_level(logging.ERROR)
    put(ssm, value)
    source = SsmPolicySource(PARAMETER, provider)

    loads = [source.load(), source.load()]
    provider.clear_cache()
    loads.append(source.load())

    assert loads == [Policy()] * 3
    errors = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert len(errors) == 1 and problem in str(getattr(errors[0], "problem", ""))
    assert invalid_policy_metrics(capsys) == 1


def test_an_invalid_change_keeps_the_last_good_policy_until_it_is_fixed(
    ssm: Any, provider: SSMProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    put(ssm, GOOD)
    source = SsmPolicySource(PARAMETER, provider)
    assert source.load() == GOOD_POLICY

    put(ssm, {"max_instance_count": 0})
    provider.clear_cache()
    assert source.load() == GOOD_POLICY
    assert invalid_policy_metrics(capsys) == 1

    put(ssm, {"max_instance_count": 2})
    provider.clear_cache()
    assert source.load() == Policy(max_instance_count=2)
    assert invalid_policy_metrics(capsys) == 0


def test_a_missing_parameter_is_reported_and_the_default_is_in_force(
    provider: SSMProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    assert SsmPolicySource("/smq/test/missing", provider).load() == Policy()
    assert invalid_policy_metrics(capsys) == 1


def throttled_client() -> tuple[Any, Stubber]:
    client = boto3.client("ssm", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    return client, Stubber(client)


def test_ssm_throttled_before_any_good_policy_is_unavailable() -> None:
    client, stub = throttled_client()
    with stub:
        stub.add_client_error("get_parameter", service_error_code="ThrottlingException", http_status_code=400)
        with pytest.raises(ServiceUnavailable) as unavailable:
            SsmPolicySource(PARAMETER, SSMProvider(boto3_client=client)).load()

    assert (unavailable.value.service, unavailable.value.code) == ("SSM", "ThrottlingException")


def test_ssm_throttled_after_a_good_policy_keeps_it() -> None:
    client, stub = throttled_client()
    provider = SSMProvider(boto3_client=client)
    source = SsmPolicySource(PARAMETER, provider)
    with stub:
        stub.add_response(
            "get_parameter",
            {"Parameter": {"Name": PARAMETER, "Type": "String", "Value": json.dumps(GOOD), "Version": 1}},
        )
        stub.add_client_error("get_parameter", service_error_code="ThrottlingException", http_status_code=400)
        assert source.load() == GOOD_POLICY
        provider.clear_cache()

        assert source.load() == GOOD_POLICY
