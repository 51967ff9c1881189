"""The cost ledger: one contract, run against the in-memory fake and the DynamoDB adapter (moto):
each attempt counts exactly once, on its UTC day, under each of its groups."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import fields
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from botocore.stub import Stubber
from moto.dynamodb.models import DynamoDBBackend
from smq_lambda.adapters.dynamodb_costs import ATTEMPT_PREFIX, DynamoCostLedger, day_key
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.cost_totals import CostFigures
from smq_lambda.domain.costs import AttemptCost
from smq_lambda.domain.states import JobState
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.ports import CostLedger, InUse

from tests.support.fake_costs import InMemoryCostLedger

DAY = date(2026, 11, 26)
NOON = datetime(2026, 11, 26, 12, tzinfo=UTC)
VISION = {"team": "vision", "owner": "arn:aws:iam::123456789012:user/alice", "tag:project": "vit"}
NLP = {"team": "nlp", "owner": "arn:aws:iam::123456789012:user/bob", "tag:project": "(untagged)"}


def cost(name: str, spend: float | None = 2.0, *, ended_at: datetime = NOON, **figures: float) -> AttemptCost:
    priced = spend is not None
    return AttemptCost(
        training_job_name=name,
        ended_at=ended_at,
        spot=False,
        billable_s=3600,
        training_s=3600,
        spend_usd=spend,
        on_demand_equivalent_usd=figures.get("on_demand", spend) if priced else None,
        spot_savings_usd=figures.get("savings", 0.0) if priced else None,
        waste_usd=figures.get("waste", 0.0) if priced else None,
        idle_stop_avoided_usd=figures.get("avoided", 0.0) if priced else None,
    )


@pytest.fixture(params=["memory", "dynamodb"])
def ledger(request: pytest.FixtureRequest) -> CostLedger:
    if request.param == "memory":
        return InMemoryCostLedger()
    return DynamoCostLedger(request.getfixturevalue("table"), request.getfixturevalue("dynamodb_client"))


def test_nothing_is_recorded_at_first(ledger: CostLedger) -> None:
    assert ledger.totals("team", [DAY]) == {}


def test_an_attempt_counts_under_each_of_its_groups(ledger: CostLedger) -> None:
    assert ledger.record(cost("vit-1", 2.5, on_demand=5.0, savings=2.5, waste=0.5, avoided=1.25), VISION)
    assert ledger.record(cost("bert-1", 1.0), NLP)

    expected = CostFigures(2.5, 5.0, 2.5, 0.5, 1.25, attempts=1)
    assert ledger.totals("team", [DAY]) == {"vision": expected, "nlp": CostFigures(1.0, 1.0, attempts=1)}
    assert ledger.totals("owner", [DAY])[VISION["owner"]] == expected
    assert ledger.totals("tag:project", [DAY]) == {"vit": expected, "(untagged)": CostFigures(1.0, 1.0, attempts=1)}
    assert ledger.totals("tag:stage", [DAY]) == {}


def test_a_duplicate_record_of_an_attempt_counts_once(ledger: CostLedger) -> None:
    assert ledger.record(cost("vit-1", 2.0), VISION) is True
    assert ledger.record(cost("vit-1", 2.0), VISION) is False
    assert ledger.record(cost("vit-1", 9.0, ended_at=NOON + timedelta(days=1)), NLP) is False

    assert ledger.totals("team", [DAY, DAY + timedelta(days=1)]) == {"vision": CostFigures(2.0, 2.0, attempts=1)}


@pytest.fixture
def atomic_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB runs a transaction in isolation; moto checks and writes its actions one by one and
    restores a copy of its tables on a failed condition, so a concurrent transaction can be lost or
    applied twice. As in job_store_contract/test_saves.py, moto's transactions are serialized."""
    lock = threading.RLock()
    transact: Callable[..., Any] = DynamoDBBackend.transact_write_items

    def locked(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return transact(*args, **kwargs)

    monkeypatch.setattr(DynamoDBBackend, "transact_write_items", locked)


@pytest.mark.usefixtures("atomic_moto")
def test_of_concurrent_records_of_one_attempt_exactly_one_counts(ledger: CostLedger) -> None:
    outcomes: list[bool] = []
    barrier = threading.Barrier(4)

    def record() -> None:
        barrier.wait()
        outcomes.append(ledger.record(cost("vit-1", 2.0), VISION))

    threads = [threading.Thread(target=record) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == [False, False, False, True]
    assert ledger.totals("team", [DAY]) == {"vision": CostFigures(2.0, 2.0, attempts=1)}


def test_totals_sum_the_days_asked_for_by_the_utc_day_of_the_end(ledger: CostLedger) -> None:
    east = timezone(timedelta(hours=9))
    ledger.record(cost("a-1", 1.0, ended_at=NOON - timedelta(days=1)), VISION)
    ledger.record(cost("b-1", 2.0, ended_at=NOON), VISION)
    ledger.record(cost("c-1", 4.0, ended_at=datetime(2026, 11, 27, 8, tzinfo=east)), VISION)
    ledger.record(cost("d-1", 8.0, ended_at=NOON + timedelta(days=2)), VISION)

    def spend(*days: date) -> float:
        return ledger.totals("team", list(days)).get("vision", CostFigures()).spend_usd

    assert spend(DAY) == 2.0 + 4.0
    assert spend(DAY - timedelta(days=1), DAY) == 1.0 + 2.0 + 4.0
    assert spend(DAY, DAY + timedelta(days=2)) == 2.0 + 4.0 + 8.0
    assert spend(DAY, DAY) == 6.0
    assert spend(DAY + timedelta(days=1)) == 0.0
    assert spend() == 0.0


def test_an_unpriced_attempt_counts_as_unpriced_not_as_free(ledger: CostLedger) -> None:
    ledger.record(cost("vit-1", None), VISION)
    ledger.record(cost("vit-2", 3.0), VISION)

    assert ledger.totals("team", [DAY]) == {"vision": CostFigures(3.0, 3.0, attempts=2, unpriced_attempts=1)}


def test_figures_are_never_negative_and_sum_exactly_to_the_cent(ledger: CostLedger) -> None:
    spends = [0.0, 0.1, 0.2, 1e-9, 12345.678901, 0.3]
    for index, spend in enumerate(spends):
        ledger.record(cost(f"vit-{index}", spend, on_demand=spend * 2, savings=spend), VISION)

    total = ledger.totals("team", [DAY])["vision"]

    assert all(getattr(total, part.name) >= 0 for part in fields(total))
    assert total.spend_usd == pytest.approx(sum(spends), abs=1e-8)
    assert total.spot_savings_usd == pytest.approx(sum(spends), abs=1e-8)
    assert total.attempts == len(spends)


def test_the_ledgers_items_are_no_jobs_and_expire(dynamodb_client: Any, table: str) -> None:
    DynamoCostLedger(table, dynamodb_client).record(cost("vit-1", 2.0), VISION)
    store = DynamoJobStore(table, dynamodb_client)

    attempt = dynamodb_client.get_item(TableName=table, Key={"name": {"S": f"{ATTEMPT_PREFIX}vit-1"}})["Item"]
    day = dynamodb_client.get_item(TableName=table, Key={"name": {"S": day_key(DAY, "team")}})["Item"]

    assert int(attempt["expires_at"]["N"]) > NOON.timestamp() + 399 * 86400
    assert attempt["groups"]["M"]["team"] == {"S": "vision"}
    assert {key: float(value["N"]) for key, value in day.items() if key.endswith(":vision")} == {
        "s:vision": 2.0,
        "o:vision": 2.0,
        "n:vision": 1.0,
    }
    assert int(day["expires_at"]["N"]) > NOON.timestamp() + 399 * 86400
    assert store.in_use() == InUse(live=[], outside={}, pools=frozenset())
    assert store.list_jobs(states=list(JobState)).jobs == []


def test_a_throttled_table_is_service_unavailable_after_a_few_tries(dynamodb_client: Any) -> None:
    ledger = DynamoCostLedger("smq-queue", dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        for _ in range(4):
            stubber.add_client_error(
                "transact_write_items", service_error_code="ThrottlingException", http_status_code=400
            )
        stubber.add_client_error("batch_get_item", service_error_code="ThrottlingException", http_status_code=400)
        with pytest.raises(ServiceUnavailable):
            ledger.record(cost("vit-1"), VISION)
        with pytest.raises(ServiceUnavailable):
            ledger.totals("team", [DAY])
        stubber.assert_no_pending_responses()


def test_a_transaction_that_met_another_on_a_day_item_is_tried_again(dynamodb_client: Any) -> None:
    ledger = DynamoCostLedger("smq-queue", dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        stubber.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            http_status_code=400,
            response_meta={},
            modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]},
        )
        stubber.add_response("transact_write_items", {})

        assert ledger.record(cost("vit-1"), {"team": "vision"}) is True
        stubber.assert_no_pending_responses()
