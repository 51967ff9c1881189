"""Fixtures of the adapter tests: fake credentials, and one in-process moto for the package.

moto starts once (clients and tables are slow to set up per test); tests stay apart by using
their own table, parameter and training job names, or their own region where they list.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.support.aws import REGION, create_queue_table, use_test_credentials


@pytest.fixture(scope="package", autouse=True)
def aws() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_test_credentials(monkeypatch)
        with mock_aws():
            yield


@pytest.fixture(scope="package")
def dynamodb_client(aws: None) -> Any:
    return boto3.client("dynamodb", region_name=REGION)


@pytest.fixture
def table(dynamodb_client: Any) -> str:
    """A fresh queue table, built from template.yaml."""
    return create_queue_table(dynamodb_client, f"smq-queue-{uuid.uuid4().hex[:8]}")


@pytest.fixture(scope="package")
def sagemaker_client(aws: None) -> Any:
    return boto3.client("sagemaker", region_name=REGION)


@pytest.fixture(scope="package")
def ssm_client(aws: None) -> Any:
    return boto3.client("ssm", region_name=REGION)
