"""The handlers share one boto3 client per service per cold start (handlers/aws_clients.py); a new
environment (the local stack starting or stopping) clears them with the handlers' other caches."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from smq_lambda.handlers.aws_clients import client

from tests.support.aws import use_test_credentials


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    use_test_credentials(monkeypatch)
    client.cache_clear()
    yield
    client.cache_clear()


def test_one_client_per_service_until_the_cache_is_cleared(fresh: None) -> None:
    sqs = client("sqs")
    assert client("sqs") is sqs
    assert client("sns") is not sqs
    client.cache_clear()
    assert client("sqs") is not sqs


def test_a_client_finds_its_endpoint_the_standard_way(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:4566")
    assert client("sqs").meta.endpoint_url == "http://127.0.0.1:4566"
