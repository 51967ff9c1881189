"""Fixtures of the DynamoDB store tests: an offline client for botocore's Stubber, a store on a fresh
moto table, and the store's backoff without its sleeps."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from smq_lambda.adapters import dynamodb_save_requests
from smq_lambda.adapters.dynamodb_store import DynamoJobStore

from tests.adapters.dynamodb_store.support import TTL_DAYS, Requests
from tests.support.aws import REGION


@pytest.fixture(scope="module")
def offline_client() -> Any:
    """A client for botocore's Stubber: requests are checked and answered, never sent."""
    return boto3.client("dynamodb", region_name=REGION)


@pytest.fixture
def stub(offline_client: Any) -> Iterator[Stubber]:
    with Stubber(offline_client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's backoff between rounds (unprocessed keys, transaction conflicts), without its sleeps."""
    monkeypatch.setattr(dynamodb_save_requests.time, "sleep", lambda _seconds: None)


@pytest.fixture
def requests_to(dynamodb_client: Any) -> Iterator[Requests]:
    recorder = Requests(dynamodb_client)
    yield recorder
    recorder.close()


@pytest.fixture
def store(dynamodb_client: Any, table: str) -> DynamoJobStore:
    return DynamoJobStore(table, dynamodb_client, ttl_days=TTL_DAYS, page_size=2)
