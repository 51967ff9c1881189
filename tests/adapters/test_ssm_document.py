"""An operator's document in SSM fails closed (adapters/ssm_document.py), on moto and botocore's
Stubber: a broken value is replaced by the newest valid version of the parameter, read through every
page of its history, in a cold instance as in a warm one; with none, the last resort; a history
that cannot be read for good is no valid version, one that passes leaves the document in force."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import SSMProvider
from botocore.stub import Stubber
from smq_lambda.adapters.ssm_document import DocumentRules, SsmDocument
from smq_lambda.errors import ConfigError, ServiceUnavailable

from tests.support.aws import REGION

BROKEN = '{"size": "large"'
LAST_RESORT = -1


def size(value: Any, source: str) -> int:
    """A tiny document kind: {"size": <non-negative integer>}."""
    if not isinstance(value, dict) or not isinstance(value.get("size"), int) or value["size"] < 0:
        raise ConfigError(f"{source}: size must be a non-negative integer")
    return int(value["size"])


def no_document() -> int:
    raise ConfigError("nothing stands in for it")


def rules(last_resort: Any = lambda: LAST_RESORT) -> DocumentRules[int]:
    return DocumentRules(
        what="size document", parse=size, metric="InvalidSize", last_resort=last_resort, last_resort_name="-1"
    )


@pytest.fixture
def parameter(ssm_client: Any) -> str:
    return f"/smq/test/{uuid.uuid4().hex}/size"


def put(ssm_client: Any, name: str, *values: object) -> None:
    """Each value as the parameter's next version."""
    for value in values:
        text = value if isinstance(value, str) else json.dumps(value)
        ssm_client.put_parameter(Name=name, Value=text, Type="String", Overwrite=True)


def counted(capsys: pytest.CaptureFixture[str]) -> int:
    """InvalidSize metrics written (EMF lines on stdout) since the last call."""
    return sum(
        1 for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"') and "InvalidSize" in line
    )


def document(ssm_client: Any, name: str, last_resort: Any = lambda: LAST_RESORT) -> SsmDocument[int]:
    """A cold start's document: a fresh provider, nothing read yet."""
    return SsmDocument(name, SSMProvider(boto3_client=ssm_client), rules(last_resort))


def test_a_valid_value_is_in_force(ssm_client: Any, parameter: str) -> None:
    put(ssm_client, parameter, {"size": 1}, {"size": 2})
    assert document(ssm_client, parameter).load() == 2


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        pytest.param([{"size": 1}, BROKEN], 1, id="the previous version"),
        pytest.param([{"size": 1}, {"size": 2}, BROKEN, {"size": "x"}], 2, id="the newest valid, not the first"),
        pytest.param([{"size": 1}, BROKEN, {"size": 3}, BROKEN], 3, id="a valid version between broken ones"),
        pytest.param([BROKEN], LAST_RESORT, id="no valid version: the last resort"),
        pytest.param([BROKEN, "[]", {"size": -1}], LAST_RESORT, id="every version broken: the last resort"),
    ],
)
def test_a_cold_start_that_reads_a_broken_value_uses_the_newest_valid_version(
    ssm_client: Any, parameter: str, versions: list[object], expected: int
) -> None:
    put(ssm_client, parameter, *versions)
    assert document(ssm_client, parameter).load() == expected


def test_the_history_is_read_to_its_last_page(ssm_client: Any, parameter: str) -> None:
    """GetParameterHistory answers at most 50 versions a page: version 52 is on the second page
    whichever way SSM orders them, and it is newer than version 2."""
    versions: list[object] = [BROKEN] * 60
    versions[1], versions[51] = {"size": 2}, {"size": 52}
    put(ssm_client, parameter, *versions)

    assert document(ssm_client, parameter).load() == 52


def test_a_warm_instance_keeps_enforcing_the_newest_valid_version(ssm_client: Any, parameter: str) -> None:
    put(ssm_client, parameter, {"size": 1})
    provider = SSMProvider(boto3_client=ssm_client)
    warm = SsmDocument(parameter, provider, rules())
    assert warm.load() == 1

    put(ssm_client, parameter, BROKEN)
    provider.clear_cache()  # what 30 seconds do
    assert warm.load() == 1 == document(ssm_client, parameter).load()

    put(ssm_client, parameter, {"size": 4})
    provider.clear_cache()
    assert warm.load() == 4


def test_with_no_valid_version_and_no_last_resort_every_load_raises_until_it_is_fixed(
    ssm_client: Any, parameter: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.ERROR)
    put(ssm_client, parameter, BROKEN)
    provider = SSMProvider(boto3_client=ssm_client)
    cold = SsmDocument(parameter, provider, rules(no_document))

    for _ in range(2):
        with pytest.raises(ConfigError) as raised:
            cold.load()
        assert str(raised.value).startswith(f"SSM parameter {parameter} is not valid JSON")
        assert str(raised.value).endswith("no version of it is valid, and nothing stands in for it")
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 1
    assert counted(capsys) == 1

    put(ssm_client, parameter, {"size": 5})
    provider.clear_cache()
    assert cold.load() == 5


def test_a_broken_value_is_reported_and_counted_once_naming_what_is_in_force(
    ssm_client: Any, parameter: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.ERROR)
    put(ssm_client, parameter, {"size": 1}, {"size": -3})
    provider = SSMProvider(boto3_client=ssm_client)
    cold = SsmDocument(parameter, provider, rules())

    loads = [cold.load(), cold.load()]
    provider.clear_cache()
    loads.append(cold.load())

    assert loads == [1, 1, 1]
    (error,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert getattr(error, "problem", "") == f"SSM parameter {parameter}: size must be a non-negative integer"
    assert "version 1 of the parameter" in error.getMessage()
    assert counted(capsys) == 1


def stubbed() -> tuple[Any, Stubber]:
    client = boto3.client("ssm", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    return client, Stubber(client)


def value(name: str, text: str) -> dict[str, Any]:
    return {"Parameter": {"Name": name, "Type": "String", "Value": text, "Version": 2}}


def test_a_history_that_cannot_be_read_for_good_has_no_valid_version() -> None:
    client, stub = stubbed()
    with stub:
        stub.add_response("get_parameter", value("/p", BROKEN))
        stub.add_client_error("get_parameter_history", service_error_code="AccessDeniedException")
        assert SsmDocument("/p", SSMProvider(boto3_client=client), rules()).load() == LAST_RESORT


def test_a_history_ssm_throttles_is_unavailable_to_a_cold_start_and_retried() -> None:
    client, stub = stubbed()
    cold = SsmDocument("/p", SSMProvider(boto3_client=client), rules())
    with stub:
        stub.add_response("get_parameter", value("/p", BROKEN))
        stub.add_client_error("get_parameter_history", service_error_code="ThrottlingException")
        stub.add_response("get_parameter_history", {"Parameters": [{"Version": 1, "Value": '{"size": 7}'}]})
        with pytest.raises(ServiceUnavailable) as unavailable:
            cold.load()
        assert cold.load() == 7  # the value is still cached; its history is read again

    assert (unavailable.value.service, unavailable.value.code) == ("SSM", "ThrottlingException")


def test_a_history_ssm_throttles_leaves_the_document_in_force_in_a_warm_instance() -> None:
    client, stub = stubbed()
    provider = SSMProvider(boto3_client=client)
    warm = SsmDocument("/p", provider, rules())
    with stub:
        stub.add_response("get_parameter", value("/p", '{"size": 8}'))
        stub.add_response("get_parameter", value("/p", BROKEN))
        stub.add_client_error("get_parameter_history", service_error_code="ThrottlingException")
        assert warm.load() == 8
        provider.clear_cache()

        assert warm.load() == 8


def test_a_document_that_gave_way_to_nothing_is_not_kept_while_ssm_throttles() -> None:
    client, stub = stubbed()
    provider = SSMProvider(boto3_client=client)
    warm = SsmDocument("/p", provider, rules(no_document))
    with stub:
        stub.add_response("get_parameter", value("/p", '{"size": 8}'))
        stub.add_client_error("get_parameter", service_error_code="ParameterNotFound")
        stub.add_client_error("get_parameter_history", service_error_code="ParameterNotFound")
        stub.add_client_error("get_parameter", service_error_code="ThrottlingException")
        assert warm.load() == 8
        provider.clear_cache()
        with pytest.raises(ConfigError, match="could not be read"):
            warm.load()
        provider.clear_cache()

        with pytest.raises(ServiceUnavailable):
            warm.load()
