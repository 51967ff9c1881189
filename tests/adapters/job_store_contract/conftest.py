"""Each contract test runs once per store; concurrency tests make moto's writes atomic."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from moto.dynamodb.models import DynamoDBBackend

from tests.adapters.job_store_contract.subjects import STORES, Subject, make_subject


@pytest.fixture(params=STORES)
def subject(request: pytest.FixtureRequest) -> Subject:
    return make_subject(request.param, request)


@pytest.fixture
def atomic_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB applies each write atomically: its condition is checked and the item changed as one
    step. moto checks and then changes, and another thread's write can land in between, so the
    concurrency tests serialize moto's writes as DynamoDB would (the in-memory store locks itself)."""
    lock = threading.RLock()

    def atomic(write: Callable[..., Any]) -> Callable[..., Any]:
        def locked(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return write(*args, **kwargs)

        return locked

    for operation in ("put_item", "update_item", "transact_write_items"):
        monkeypatch.setattr(DynamoDBBackend, operation, atomic(getattr(DynamoDBBackend, operation)))
