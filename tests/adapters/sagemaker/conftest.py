"""Fixtures of the SageMaker adapter tests: an offline client for botocore's Stubber, one that reaches
nothing, and the adapter over them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from smq_lambda.adapters.sagemaker import SageMakerTrainingService

from tests.adapters.sagemaker.support import STACK
from tests.support.aws import REGION


@pytest.fixture(scope="module")
def offline_client() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


@pytest.fixture
def stub(offline_client: Any) -> Iterator[Stubber]:
    with Stubber(offline_client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture(scope="module")
def unreachable_client() -> Any:
    """A client whose endpoint is a closed local port, tried once."""
    return boto3.client(
        "sagemaker",
        region_name=REGION,
        endpoint_url="http://127.0.0.1:9",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=2),
    )


@pytest.fixture
def service(offline_client: Any) -> SageMakerTrainingService:
    return SageMakerTrainingService(offline_client, page_size=2)


@pytest.fixture
def stacked(offline_client: Any) -> SageMakerTrainingService:
    """The adapter of a stack named STACK."""
    return SageMakerTrainingService(offline_client, stack=STACK)
