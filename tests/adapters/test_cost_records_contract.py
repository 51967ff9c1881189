"""The cost records: one contract, run against the in-memory fake and the DynamoDB adapter (moto):
each attempt counts exactly once, on its UTC day, under each of its groups; a cost tag's values
never fill a day, and a tag never keeps the team and owner totals from counting."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import fields
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from botocore.stub import Stubber
from moto.dynamodb.models import DynamoDBBackend
from smq_lambda.adapters.attribute_values import Item
from smq_lambda.adapters.dynamodb_costs import ATTEMPT_PREFIX, FIGURE_CODES, DynamoCostRecords, day_key
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.costs.cost_totals import (
    MAX_TAG_GROUP_BYTES,
    MAX_TAG_GROUPS_PER_DAY,
    OTHER,
    CostFigures,
    tag_group,
)
from smq_lambda.domain.costs.costs import AttemptCost
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import CostDimensionsPending, ServiceUnavailable
from smq_lambda.ports import CostRecords, InUse

from tests.adapters.bounds import ITEM_LIMIT, item_size
from tests.support.fake_costs import InMemoryCostRecords

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
def records(request: pytest.FixtureRequest) -> CostRecords:
    if request.param == "memory":
        return InMemoryCostRecords()
    return DynamoCostRecords(request.getfixturevalue("table"), request.getfixturevalue("dynamodb_client"))


def test_nothing_is_recorded_at_first(records: CostRecords) -> None:
    assert records.totals("team", [DAY]) == {}


def test_an_attempt_counts_under_each_of_its_groups(records: CostRecords) -> None:
    assert records.record(cost("vit-1", 2.5, on_demand=5.0, savings=2.5, waste=0.5, avoided=1.25), VISION)
    assert records.record(cost("bert-1", 1.0), NLP)

    expected = CostFigures(2.5, 5.0, 2.5, 0.5, 1.25, attempts=1)
    assert records.totals("team", [DAY]) == {"vision": expected, "nlp": CostFigures(1.0, 1.0, attempts=1)}
    assert records.totals("owner", [DAY])[VISION["owner"]] == expected
    assert records.totals("tag:project", [DAY]) == {"vit": expected, "(untagged)": CostFigures(1.0, 1.0, attempts=1)}
    assert records.totals("tag:stage", [DAY]) == {}


def test_a_duplicate_record_of_an_attempt_counts_once(records: CostRecords) -> None:
    assert records.record(cost("vit-1", 2.0), VISION) is True
    assert records.record(cost("vit-1", 2.0), VISION) is False
    assert records.record(cost("vit-1", 9.0, ended_at=NOON + timedelta(days=1)), NLP) is False

    days = [DAY, DAY + timedelta(days=1)]
    once = CostFigures(2.0, 2.0, attempts=1)
    assert records.totals("team", days) == {"vision": once}
    assert records.totals("owner", days) == {VISION["owner"]: once}
    assert records.totals("tag:project", days) == {"vit": once}


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
def test_of_concurrent_records_of_one_attempt_exactly_one_counts(records: CostRecords) -> None:
    outcomes: list[bool] = []
    barrier = threading.Barrier(4)

    def record() -> None:
        barrier.wait()
        outcomes.append(records.record(cost("vit-1", 2.0), VISION))

    threads = [threading.Thread(target=record) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == [False, False, False, True]
    assert records.totals("team", [DAY]) == {"vision": CostFigures(2.0, 2.0, attempts=1)}
    assert records.totals("tag:project", [DAY]) == {"vit": CostFigures(2.0, 2.0, attempts=1)}


def with_project(number: int) -> dict[str, str]:
    """VISION's groups with a project value of its own, as long as a tag value may be."""
    return {**VISION, "tag:project": f"{number:03d}" + "p" * 253}


def test_a_cost_tag_of_a_value_per_run_counts_past_the_days_limit_in_other() -> None:
    """501 distinct values of 256 characters on one day (about 500 filled DynamoDB's 400 KB item):
    the first MAX_TAG_GROUPS_PER_DAY keep their names, cut to MAX_TAG_GROUP_BYTES; the others count
    in OTHER; every attempt counts under its team. In memory, at full scale (moto copies its whole
    table for each action of a transaction, so 500 records take minutes there); the DynamoDB
    adapter's fold at the limit is the next test's."""
    records = InMemoryCostRecords()
    for number in range(501):
        assert records.record(cost(f"run-{number}", 1.0), with_project(number)) is True

    assert records.totals("team", [DAY]) == {"vision": CostFigures(501.0, 501.0, attempts=501)}
    by_project = records.totals("tag:project", [DAY])
    named = sorted(group for group in by_project if group != OTHER)
    assert [group[:3] for group in named] == [f"{number:03d}" for number in range(MAX_TAG_GROUPS_PER_DAY)]
    assert {len(group.encode()) for group in named} == {MAX_TAG_GROUP_BYTES}
    assert all(group.endswith("…") for group in named)
    assert by_project[OTHER] == CostFigures(301.0, 301.0, attempts=501 - MAX_TAG_GROUPS_PER_DAY)


def every_figure(group: str) -> Item:
    """Every figure of `group` in a day item, each a large sum (100 billion dollars)."""
    return {f"{code}:{group}": {"N": "99999999999.999999999"} for code in FIGURE_CODES.values()}


def added(before: Item, after: Item, attribute: str) -> Decimal:
    return Decimal(after[attribute]["N"]) - Decimal(before[attribute]["N"])


def test_a_tag_day_at_its_limit_fits_an_item_and_takes_a_new_value_in_other(dynamodb_client: Any, table: str) -> None:
    """The largest tag day item there can be (MAX_TAG_GROUPS_PER_DAY groups of MAX_TAG_GROUP_BYTES
    and OTHER, every figure there, even at DynamoDB's 38 digits) is well within 400 KB; into it a
    new value counts in OTHER, a kept one in its own group, and the team counts whatever the tag."""
    records = DynamoCostRecords(table, dynamodb_client)
    kept = [tag_group(with_project(number)["tag:project"]) for number in range(MAX_TAG_GROUPS_PER_DAY)]
    item: Item = {"name": {"S": day_key(DAY, "tag:project")}, "named": {"SS": kept}, **every_figure(OTHER)}
    for group in kept:
        item.update(every_figure(group))
    dynamodb_client.put_item(TableName=table, Item=item)

    assert records.record(cost("new-1", 1.0), with_project(MAX_TAG_GROUPS_PER_DAY)) is True
    assert records.record(cost("kept-1", 1.0), with_project(0)) is True

    day = dynamodb_client.get_item(TableName=table, Key={"name": {"S": day_key(DAY, "tag:project")}})["Item"]
    widest = {name: {"N": "9" * 38} if "N" in value else value for name, value in day.items()}
    assert item_size(widest) < 250 * 1024 < ITEM_LIMIT
    assert set(day["named"]["SS"]) == set(kept)
    assert (added(item, day, f"n:{OTHER}"), added(item, day, f"s:{OTHER}")) == (1, 1)
    assert (added(item, day, f"n:{kept[0]}"), added(item, day, f"s:{kept[0]}")) == (1, 1)
    assert records.totals("team", [DAY]) == {"vision": CostFigures(2.0, 2.0, attempts=2)}


def test_totals_sum_the_days_asked_for_by_the_utc_day_of_the_end(records: CostRecords) -> None:
    east = timezone(timedelta(hours=9))
    records.record(cost("a-1", 1.0, ended_at=NOON - timedelta(days=1)), VISION)
    records.record(cost("b-1", 2.0, ended_at=NOON), VISION)
    records.record(cost("c-1", 4.0, ended_at=datetime(2026, 11, 27, 8, tzinfo=east)), VISION)
    records.record(cost("d-1", 8.0, ended_at=NOON + timedelta(days=2)), VISION)

    def spend(*days: date) -> float:
        return records.totals("team", list(days)).get("vision", CostFigures()).spend_usd

    assert spend(DAY) == 2.0 + 4.0
    assert spend(DAY - timedelta(days=1), DAY) == 1.0 + 2.0 + 4.0
    assert spend(DAY, DAY + timedelta(days=2)) == 2.0 + 4.0 + 8.0
    assert spend(DAY, DAY) == 6.0
    assert spend(DAY + timedelta(days=1)) == 0.0
    assert spend() == 0.0


def test_an_unpriced_attempt_counts_as_unpriced_not_as_free(records: CostRecords) -> None:
    records.record(cost("vit-1", None), VISION)
    records.record(cost("vit-2", 3.0), VISION)

    assert records.totals("team", [DAY]) == {"vision": CostFigures(3.0, 3.0, attempts=2, unpriced_attempts=1)}


def test_figures_are_never_negative_and_sum_exactly_to_the_cent(records: CostRecords) -> None:
    spends = [0.0, 0.1, 0.2, 1e-9, 12345.678901, 0.3]
    for index, spend in enumerate(spends):
        records.record(cost(f"vit-{index}", spend, on_demand=spend * 2, savings=spend), VISION)

    total = records.totals("team", [DAY])["vision"]

    assert all(getattr(total, part.name) >= 0 for part in fields(total))
    assert total.spend_usd == pytest.approx(sum(spends), abs=1e-8)
    assert total.spot_savings_usd == pytest.approx(sum(spends), abs=1e-8)
    assert total.attempts == len(spends)


def fill(dynamodb_client: Any, table: str, key: str) -> None:
    """Make the item `key` as large as DynamoDB takes: as a day item of a cost tag with a value per
    run, written before day items were bounded, could be."""
    filler = {f"s:{number:04d}{'p' * 250}": {"N": "1"} for number in range(1500)}
    dynamodb_client.put_item(TableName=table, Item={"name": {"S": key}, **filler})
    number = 0
    for size in (1000, 100, 10):
        while True:
            number += 1
            try:
                dynamodb_client.update_item(
                    TableName=table,
                    Key={"name": {"S": key}},
                    UpdateExpression="SET #filler = :one",
                    ExpressionAttributeNames={"#filler": f"f{number:05d}".ljust(size, "f")},
                    ExpressionAttributeValues={":one": {"N": "1"}},
                )
            except dynamodb_client.exceptions.ClientError as exc:
                assert exc.response["Error"]["Code"] == "ValidationException"
                break


def test_a_tag_dimension_that_cannot_be_written_keeps_no_total_from_counting(dynamodb_client: Any, table: str) -> None:
    """A day item that takes no more refuses the tag's write: team and owner still count, the tag
    stays pending on the attempt, and the next record of the attempt (its report delivered again)
    writes it, once, with the figures first recorded."""
    records = DynamoCostRecords(table, dynamodb_client)
    fill(dynamodb_client, table, day_key(DAY, "tag:project"))

    with pytest.raises(CostDimensionsPending) as pending:
        records.record(cost("vit-1", 2.0), VISION)

    once = CostFigures(2.0, 2.0, attempts=1)
    assert pending.value.recorded is True
    assert records.totals("team", [DAY]) == {"vision": once}
    assert records.totals("owner", [DAY]) == {VISION["owner"]: once}

    dynamodb_client.delete_item(TableName=table, Key={"name": {"S": day_key(DAY, "tag:project")}})
    assert records.record(cost("vit-1", 9.0, ended_at=NOON + timedelta(days=1)), VISION) is False
    assert records.record(cost("vit-1", 9.0), VISION) is False

    days = [DAY, DAY + timedelta(days=1)]
    assert records.totals("tag:project", days) == {"vit": once}
    assert records.totals("team", days) == {"vision": once}


def test_the_cost_records_items_are_no_jobs_and_expire(dynamodb_client: Any, table: str) -> None:
    DynamoCostRecords(table, dynamodb_client).record(cost("vit-1", 2.0), VISION)
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
    records = DynamoCostRecords("smq-queue", dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        for _ in range(4):
            stubber.add_client_error(
                "transact_write_items", service_error_code="ThrottlingException", http_status_code=400
            )
        stubber.add_client_error("batch_get_item", service_error_code="ThrottlingException", http_status_code=400)
        with pytest.raises(ServiceUnavailable):
            records.record(cost("vit-1"), VISION)
        with pytest.raises(ServiceUnavailable):
            records.totals("team", [DAY])
        stubber.assert_no_pending_responses()


def test_a_transaction_that_met_another_on_a_day_item_is_tried_again(dynamodb_client: Any) -> None:
    records = DynamoCostRecords("smq-queue", dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        stubber.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            http_status_code=400,
            response_meta={},
            modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]},
        )
        stubber.add_response("transact_write_items", {})

        assert records.record(cost("vit-1"), {"team": "vision"}) is True
        stubber.assert_no_pending_responses()
