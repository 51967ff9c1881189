"""What the store reads: never a scan, the pending index no further than a queue front, counts added
up over pages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import job_order_key
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.states import JobState

from tests.adapters.builders import G5, P5, T0, job
from tests.adapters.dynamodb_store.support import STUB_TABLE, Requests, projected, running, started


def test_nothing_ever_scans(dynamodb_client: Any, table: str, requests_to: Requests) -> None:
    store = DynamoJobStore(table, dynamodb_client, page_size=1)
    for minute in range(3):
        store.create(job(f"j{minute}", minute=minute, groups=[(G5, 1), (P5, 1)] if minute == 2 else None))
    current = store.get("j0")
    assert current is not None
    live = store.save(started(current), expected_version=1)
    store.save(running(live), expected_version=live.version)
    store.save(lifecycle.explain(replace(job("j1", minute=1), version=1), T0, "waits"), expected_version=1)
    store.record_outside("by-hand", {G5: 2}, holding=True)
    store.record_outside("by-hand", {G5: 2}, holding=False)
    store.replace_outside({"scripted": {P5: 1}})
    store.in_use()
    store.pending_front(G5, 5)
    store.count_pending(G5)
    store.count_pending(G5, after="0", before="z")
    store.list_jobs(states=list(JobState), limit=1)
    store.list_jobs(states=[JobState.PENDING], pool=G5, owner="someone", limit=1)

    operations = set(requests_to.operations())
    assert "Scan" not in operations
    assert operations == {"PutItem", "GetItem", "Query", "BatchGetItem", "UpdateItem", "TransactWriteItems"}


def test_passes_and_listings_never_read_the_pending_index_whole(
    dynamodb_client: Any, table: str, requests_to: Requests
) -> None:
    """A queue front is one bounded Query; listings use the by-state index; only counts read far."""
    store = DynamoJobStore(table, dynamodb_client)
    for minute in range(6):
        store.create(job(f"j{minute}", minute=minute))

    front = store.pending_front(G5, 2)
    store.list_jobs(states=[JobState.PENDING], pool=G5)

    assert [each.name for each in front] == ["j0", "j1"]
    front_query, listing = requests_to.of("Query")
    assert front_query["IndexName"] == "pending-by-pool"
    assert front_query["Limit"] == 2
    assert listing["IndexName"] == "by-state"


def _front_query(limit: int, **extra: Any) -> dict[str, Any]:
    return {
        "TableName": STUB_TABLE,
        "IndexName": "pending-by-pool",
        "KeyConditionExpression": "#pending_pool = :key",
        "ExpressionAttributeValues": {":key": {"S": G5}},
        "ExpressionAttributeNames": {"#pending_pool": "pending_pool"},
        "Limit": limit,
        **extra,
    }


def test_pending_front_queries_no_further_than_its_limit(stub: Stubber, offline_client: Any) -> None:
    pending = [replace(job(f"j{index}", minute=index), version=1) for index in range(4)]
    last_key = {"name": {"S": "j1"}, "pending_pool": {"S": G5}, "order_key": {"S": job_order_key(pending[1])}}
    stub.add_response(
        "query",
        {"Items": [projected(each) for each in pending[:2]], "Count": 2, "LastEvaluatedKey": last_key},
        _front_query(3),
    )
    stub.add_response(
        "query",
        {"Items": [projected(each) for each in pending[2:]], "Count": 2, "LastEvaluatedKey": {"name": {"S": "j3"}}},
        _front_query(3, ExclusiveStartKey=last_key),
    )

    front = DynamoJobStore(STUB_TABLE, offline_client).pending_front(G5, 3)

    assert front == pending[:3]
    assert all(each.request == {} and each.history == () for each in front)


def test_pending_front_reads_pages_no_larger_than_the_stores(stub: Stubber, offline_client: Any) -> None:
    stub.add_response("query", {"Items": [], "Count": 0}, _front_query(2))

    assert DynamoJobStore(STUB_TABLE, offline_client, page_size=2).pending_front(G5, 50) == []


@pytest.mark.parametrize("limit", [0, -1])
def test_an_empty_front_reads_nothing(stub: Stubber, offline_client: Any, limit: int) -> None:
    assert DynamoJobStore(STUB_TABLE, offline_client).pending_front(G5, limit) == []


def _count_query(condition: str, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "TableName": STUB_TABLE,
        "IndexName": "pending-by-pool",
        "KeyConditionExpression": condition,
        "ExpressionAttributeNames": {
            placeholder: placeholder[1:] for placeholder in ("#pending_pool", "#order_key") if placeholder in condition
        },
        "ExpressionAttributeValues": {":key": {"S": G5}, **values},
        "Select": "COUNT",
    }


@pytest.mark.parametrize(
    ("after", "before", "condition", "values"),
    [
        (None, None, "#pending_pool = :key", {}),
        ("k1", None, "#pending_pool = :key AND #order_key > :after", {":after": {"S": "k1"}}),
        (None, "k2", "#pending_pool = :key AND #order_key < :before", {":before": {"S": "k2"}}),
    ],
)
def test_count_pending_adds_up_count_pages(
    stub: Stubber,
    offline_client: Any,
    after: str | None,
    before: str | None,
    condition: str,
    values: dict[str, Any],
) -> None:
    expected = _count_query(condition, values)
    stub.add_response("query", {"Count": 3, "ScannedCount": 3, "LastEvaluatedKey": {"name": {"S": "x"}}}, expected)
    stub.add_response("query", {"Count": 2, "ScannedCount": 2}, {**expected, "ExclusiveStartKey": {"name": {"S": "x"}}})

    assert DynamoJobStore(STUB_TABLE, offline_client).count_pending(G5, after=after, before=before) == 5


@pytest.mark.parametrize(("after_exists", "before_exists", "expected"), [(0, 0, 4), (1, 0, 3), (0, 1, 3), (1, 1, 2)])
def test_count_pending_between_two_keys_leaves_the_bounds_out(
    stub: Stubber, offline_client: Any, after_exists: int, before_exists: int, expected: int
) -> None:
    """BETWEEN includes its bounds: a pending job at either is counted, then taken off."""
    between = _count_query(
        "#pending_pool = :key AND #order_key BETWEEN :after AND :before",
        {":after": {"S": "k1"}, ":before": {"S": "k9"}},
    )
    stub.add_response("query", {"Count": 4, "ScannedCount": 4}, between)
    for key, exists in (("k1", after_exists), ("k9", before_exists)):
        stub.add_response(
            "query",
            {"Count": exists, "ScannedCount": exists},
            _count_query("#pending_pool = :key AND #order_key = :order_key", {":order_key": {"S": key}}),
        )

    assert DynamoJobStore(STUB_TABLE, offline_client).count_pending(G5, after="k1", before="k9") == expected


def test_count_pending_with_bounds_the_wrong_way_round_is_zero(offline_client: Any) -> None:
    """No pending job lies strictly between `k9` and `k1`. The Stubber answers as DynamoDB does."""
    with Stubber(offline_client) as stubber:
        stubber.add_client_error(
            "query",
            service_error_code="ValidationException",
            service_message="Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be "
            "greater than or equal to lower bound",
            http_status_code=400,
        )

        assert DynamoJobStore(STUB_TABLE, offline_client).count_pending(G5, after="k9", before="k1") == 0
