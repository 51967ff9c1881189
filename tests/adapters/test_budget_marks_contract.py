"""The budget warning marks: one contract, run against the in-memory fake and the DynamoDB adapter
(moto): of any number of claims of one team, month and threshold, exactly one wins."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from moto.dynamodb.models import DynamoDBBackend
from smq_lambda.adapters.dynamodb_budget_marks import MARK_TTL_DAYS, DynamoBudgetWarningMarks, mark_key
from smq_lambda.ports import BudgetWarningMarks

from tests.support.fake_budget_marks import InMemoryBudgetWarningMarks

NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)


@pytest.fixture(params=["memory", "dynamodb"])
def marks(request: pytest.FixtureRequest) -> BudgetWarningMarks:
    if request.param == "memory":
        return InMemoryBudgetWarningMarks()
    client: Any = request.getfixturevalue("dynamodb_client")
    return DynamoBudgetWarningMarks(request.getfixturevalue("table"), client, clock=lambda: NOW)


def test_a_mark_is_claimed_once(marks: BudgetWarningMarks) -> None:
    assert marks.claim("vision", "2026-11", 0.8) is True
    assert marks.claim("vision", "2026-11", 0.8) is False


def test_teams_months_and_thresholds_have_marks_of_their_own(marks: BudgetWarningMarks) -> None:
    marks.claim("vision", "2026-11", 0.8)

    assert marks.claim("vision", "2026-11", 1.0) is True
    assert marks.claim("vision", "2026-12", 0.8) is True
    assert marks.claim("nlp", "2026-11", 0.8) is True


@pytest.fixture
def atomic_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB checks a condition and writes atomically; moto does not, so its puts are serialized
    (as the local stack does: client/smq/local/atomic_dynamodb.py)."""
    lock = threading.RLock()
    put: Callable[..., Any] = DynamoDBBackend.put_item

    def locked(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return put(*args, **kwargs)

    monkeypatch.setattr(DynamoDBBackend, "put_item", locked)


@pytest.mark.usefixtures("atomic_moto")
def test_of_concurrent_claims_exactly_one_wins(marks: BudgetWarningMarks) -> None:
    outcomes: list[bool] = []
    barrier = threading.Barrier(6)

    def claim() -> None:
        barrier.wait()
        outcomes.append(marks.claim("vision", "2026-11", 1.0))

    threads = [threading.Thread(target=claim) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == [False] * 5 + [True]


def test_the_mark_is_one_item_that_expires(dynamodb_client: Any, table: str) -> None:
    DynamoBudgetWarningMarks(table, dynamodb_client, clock=lambda: NOW).claim("vision", "2026-11", 0.8)

    item = dynamodb_client.get_item(TableName=table, Key={"name": {"S": "#budget-warned#vision#2026-11#0.8"}})["Item"]

    assert mark_key("vision", "2026-11", 0.8) == "#budget-warned#vision#2026-11#0.8"
    assert int(item["expires_at"]["N"]) == int(NOW.timestamp()) + MARK_TTL_DAYS * 86400
