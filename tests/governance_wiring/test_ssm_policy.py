"""The governance policy from SSM (moto): hot-reloaded; an invalid document is logged and counted in
`InvalidPolicy` once per value, and the newest valid version of the parameter is in force, in a cold
instance as in a warm one; with none, the stack's policy; never the default (no policy at all)."""

from __future__ import annotations

import contextlib
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
from smq_lambda.errors import ConfigError, ServiceUnavailable
from smq_lambda.governance.policy import Policy

from tests.support.aws import REGION, use_test_credentials

PARAMETER = "/smq/test/policy"
GOOD = {"required_tags": ["project"], "max_instance_count": 4}
GOOD_POLICY = Policy(required_tags=("project",), max_instance_count=4)
STACK = json.dumps({"required_tags": ["cost-center"]})
STACK_POLICY = Policy(required_tags=("cost-center",))
"""SMQ_STACK_POLICY: the policy the stack's parameters describe."""


@pytest.fixture(scope="module")
def moto_ssm() -> Iterator[Any]:
    """One moto SSM for the module: starting moto for each test was most of this file's time."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_test_credentials(monkeypatch)
        with mock_aws():
            yield boto3.client("ssm")


@pytest.fixture
def ssm(moto_ssm: Any) -> Any:
    """The module's SSM without the policy parameter: no version of it left by an earlier test."""
    with contextlib.suppress(moto_ssm.exceptions.ParameterNotFound):
        moto_ssm.delete_parameter(Name=PARAMETER)
    return moto_ssm


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
    source = SsmPolicySource(PARAMETER, provider, STACK)
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
def test_an_invalid_only_version_puts_the_stacks_policy_in_force_and_is_reported_once(
    ssm: Any,
    provider: SSMProvider,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    value: object,
    problem: str,
) -> None:
    caplog.set_level(logging.ERROR)
    put(ssm, value)
    source = SsmPolicySource(PARAMETER, provider, STACK)

    loads = [source.load(), source.load()]
    provider.clear_cache()
    loads.append(source.load())

    assert loads == [STACK_POLICY] * 3
    errors = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert len(errors) == 1 and problem in str(getattr(errors[0], "problem", ""))
    assert invalid_policy_metrics(capsys) == 1


def test_an_invalid_change_keeps_the_last_good_policy_until_it_is_fixed(
    ssm: Any, provider: SSMProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    put(ssm, GOOD)
    source = SsmPolicySource(PARAMETER, provider, STACK)
    assert source.load() == GOOD_POLICY

    put(ssm, {"max_instance_count": 0})
    provider.clear_cache()
    assert source.load() == GOOD_POLICY
    assert invalid_policy_metrics(capsys) == 1

    put(ssm, {"max_instance_count": 2})
    provider.clear_cache()
    assert source.load() == Policy(max_instance_count=2)
    assert invalid_policy_metrics(capsys) == 0


def test_a_missing_parameter_is_reported_and_the_stacks_policy_is_in_force(
    provider: SSMProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    assert SsmPolicySource("/smq/test/missing", provider, STACK).load() == STACK_POLICY
    assert invalid_policy_metrics(capsys) == 1


def test_a_cold_start_that_reads_a_broken_policy_enforces_the_newest_valid_version(
    ssm: Any, provider: SSMProvider, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """The defect: a new instance that read a broken document enforced no policy at all."""
    caplog.set_level(logging.ERROR)
    put(ssm, {"max_instance_count": 2})
    put(ssm, GOOD)
    put(ssm, {"required_tags": "project"})

    assert SsmPolicySource(PARAMETER, provider, STACK).load() == GOOD_POLICY
    (error,) = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert "version 2 of the parameter" in error.getMessage()
    assert invalid_policy_metrics(capsys) == 1


@pytest.mark.parametrize("stack", [None, "{not json", json.dumps({"max_instance_count": 0})])
def test_with_no_valid_version_nor_stack_policy_no_policy_is_in_force(
    ssm: Any, provider: SSMProvider, stack: str | None
) -> None:
    """Not the defaults: they would let through what the real policy refuses."""
    put(ssm, "{not json")
    source = SsmPolicySource(PARAMETER, provider, stack)

    with pytest.raises(ConfigError) as raised:
        source.load()

    assert str(raised.value).startswith(f"SSM parameter {PARAMETER} is not valid JSON")
    assert "the stack's policy (SMQ_STACK_POLICY)" in str(raised.value)


def throttled_client() -> tuple[Any, Stubber]:
    client = boto3.client("ssm", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    return client, Stubber(client)


def test_ssm_throttled_before_any_good_policy_is_unavailable() -> None:
    client, stub = throttled_client()
    with stub:
        stub.add_client_error("get_parameter", service_error_code="ThrottlingException", http_status_code=400)
        with pytest.raises(ServiceUnavailable) as unavailable:
            SsmPolicySource(PARAMETER, SSMProvider(boto3_client=client), STACK).load()

    assert (unavailable.value.service, unavailable.value.code) == ("SSM", "ThrottlingException")


def test_ssm_throttled_after_a_good_policy_keeps_it() -> None:
    client, stub = throttled_client()
    provider = SSMProvider(boto3_client=client)
    source = SsmPolicySource(PARAMETER, provider, STACK)
    with stub:
        stub.add_response(
            "get_parameter",
            {"Parameter": {"Name": PARAMETER, "Type": "String", "Value": json.dumps(GOOD), "Version": 1}},
        )
        stub.add_client_error("get_parameter", service_error_code="ThrottlingException", http_status_code=400)
        assert source.load() == GOOD_POLICY
        provider.clear_cache()

        assert source.load() == GOOD_POLICY
