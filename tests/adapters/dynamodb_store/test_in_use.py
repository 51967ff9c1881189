"""`in_use` and the jobs outside the queue: the registry, the pools' usage items and the live jobs
read by key (Stubber and moto)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from botocore.stub import ANY, Stubber
from smq_lambda.adapters import dynamodb_table
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import to_item
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.ports import InUse

from tests.adapters.builders import G5, P5, T0, job
from tests.adapters.dynamodb_store.support import (
    STUB_TABLE,
    TTL_DAYS,
    raw,
    registry_and_pool,
    registry_update,
    running,
    started,
)


def test_in_use_reads_the_registry_the_pool_items_and_then_the_live_jobs_by_key(
    stub: Stubber, offline_client: Any
) -> None:
    """`b` ended a moment ago: its name may still be read from a live set, its item says otherwise."""
    hetero = replace(job("a", minute=0, groups=[(G5, 1), (P5, 2)]), version=1)
    running_a = running(started(hetero))
    cancelled_b = lifecycle.cancel_pending(replace(job("b", minute=1), version=1), T0, by="x")
    preempting_c = lifecycle.request_stop(
        running(started(replace(job("c", minute=2, pool=P5), version=1))), T0, preempt=True, reason="p"
    )
    stub.add_response(
        "get_item",
        {"Item": {"name": {"S": "#pools"}, "pools": {"SS": [P5, G5]}}},
        {"TableName": STUB_TABLE, "Key": {"name": {"S": "#pools"}}, "ConsistentRead": True},
    )
    stub.add_response(
        "batch_get_item",
        {
            "Responses": {
                STUB_TABLE: [
                    {
                        "name": {"S": f"#pool#{P5}"},
                        "live": {"SS": ["a", "c"]},
                        "outside": {"SS": ["cluster=4", "other=1"]},
                    },
                    {"name": {"S": f"#pool#{G5}"}, "live": {"SS": ["a", "b"]}, "outside": {"SS": ["cluster=2"]}},
                ]
            }
        },
        {
            "RequestItems": {
                STUB_TABLE: {
                    "Keys": [{"name": {"S": f"#pool#{G5}"}}, {"name": {"S": f"#pool#{P5}"}}],
                    "ConsistentRead": True,
                }
            }
        },
    )
    stub.add_response(
        "batch_get_item",
        {
            "Responses": {
                STUB_TABLE: [to_item(each, ttl_days=TTL_DAYS) for each in (preempting_c, cancelled_b, running_a)]
            }
        },
        {
            "RequestItems": {
                STUB_TABLE: {
                    "Keys": [{"name": {"S": "a"}}, {"name": {"S": "b"}}, {"name": {"S": "c"}}],
                    "ConsistentRead": True,
                }
            }
        },
    )

    held = DynamoJobStore(STUB_TABLE, offline_client).in_use()

    assert held == InUse(live=[running_a, preempting_c], outside={G5: 2, P5: 5}, pools=frozenset({G5, P5}))


def test_in_use_before_any_job_reads_the_registry_only(stub: Stubber, offline_client: Any) -> None:
    stub.add_response(
        "get_item", {}, {"TableName": STUB_TABLE, "Key": {"name": {"S": "#pools"}}, "ConsistentRead": True}
    )

    assert DynamoJobStore(STUB_TABLE, offline_client).in_use() == InUse(live=[], outside={}, pools=frozenset())


def test_unprocessed_keys_are_read_again(stub: Stubber, offline_client: Any) -> None:
    live = [running(started(replace(job(name, minute=minute), version=1))) for minute, name in enumerate("ab")]
    registry_and_pool(stub, "a", "b")
    stub.add_response(
        "batch_get_item",
        {
            "Responses": {STUB_TABLE: [to_item(live[0], ttl_days=TTL_DAYS)]},
            "UnprocessedKeys": {STUB_TABLE: {"Keys": [{"name": {"S": "b"}}], "ConsistentRead": True}},
        },
        {"RequestItems": {STUB_TABLE: {"Keys": ANY, "ConsistentRead": True}}},
    )
    stub.add_response(
        "batch_get_item",
        {"Responses": {STUB_TABLE: [to_item(live[1], ttl_days=TTL_DAYS)]}},
        {"RequestItems": {STUB_TABLE: {"Keys": [{"name": {"S": "b"}}], "ConsistentRead": True}}},
    )

    assert DynamoJobStore(STUB_TABLE, offline_client).in_use().live == live


def test_keys_left_unprocessed_round_after_round_are_service_unavailable(stub: Stubber, offline_client: Any) -> None:
    registry_and_pool(stub, "a")
    unprocessed = {STUB_TABLE: {"Keys": [{"name": {"S": "a"}}], "ConsistentRead": True}}
    for _ in range(dynamodb_table.BATCH_GET_ROUNDS):
        stub.add_response("batch_get_item", {"Responses": {STUB_TABLE: []}, "UnprocessedKeys": unprocessed}, None)

    with pytest.raises(ServiceUnavailable) as unavailable:
        DynamoJobStore(STUB_TABLE, offline_client).in_use()

    assert unavailable.value.code == "UnprocessedKeys"


def test_in_use_reads_more_than_one_batch(dynamodb_client: Any, table: str) -> None:
    """105 live jobs: more than one BatchGetItem's 100 keys."""
    jobs = [running(started(replace(job(f"j{index:03d}", minute=index), version=1))) for index in range(105)]
    writes = [{"PutRequest": {"Item": to_item(each, ttl_days=TTL_DAYS)}} for each in jobs]
    writes.append({"PutRequest": {"Item": {"name": {"S": "#pools"}, "pools": {"SS": [G5]}}}})
    writes.append(
        {"PutRequest": {"Item": {"name": {"S": f"#pool#{G5}"}, "live": {"SS": [each.name for each in jobs]}}}}
    )
    for start in range(0, len(writes), 25):
        dynamodb_client.batch_write_item(RequestItems={table: writes[start : start + 25]})

    held = DynamoJobStore(table, dynamodb_client).in_use()

    assert held.live == jobs


def test_the_usage_items_are_in_no_index_and_never_expire(
    store: DynamoJobStore, dynamodb_client: Any, table: str
) -> None:
    store.create(job("a", groups=[(G5, 1), (P5, 1)]))
    current = store.get("a")
    assert current is not None
    store.save(started(current), expected_version=1)
    store.record_outside("by-hand", {G5: 2}, holding=True)

    for key in ("#pools", f"#pool#{G5}", f"#pool#{P5}"):
        item = raw(dynamodb_client, table, key)
        assert item is not None
        assert not {"order_key", "pending_pool", "state", "expires_at"} & set(item)
    assert raw(dynamodb_client, table, "#pools") == {"name": {"S": "#pools"}, "pools": {"SS": sorted([G5, P5])}}
    assert raw(dynamodb_client, table, f"#pool#{G5}") == {
        "name": {"S": f"#pool#{G5}"},
        "live": {"SS": ["a"]},
        "outside": {"SS": ["by-hand=2"]},
    }


def test_replace_outside_empties_the_pools_it_no_longer_names(
    store: DynamoJobStore, dynamodb_client: Any, table: str
) -> None:
    store.record_outside("gone", {G5: 2}, holding=True)

    store.replace_outside({"still": {P5: 1}})

    assert "outside" not in (raw(dynamodb_client, table, f"#pool#{G5}") or {})
    assert (raw(dynamodb_client, table, f"#pool#{P5}") or {}).get("outside") == {"SS": ["still=1"]}


def test_record_outside_adds_and_deletes_the_jobs_entry_in_each_pool(stub: Stubber, offline_client: Any) -> None:
    stub.add_response("update_item", {}, registry_update(sorted([G5, P5])))
    for operation in ("ADD", "DELETE"):
        for pool, count in ((P5, 4), (G5, 1)):
            stub.add_response(
                "update_item",
                {},
                {
                    "TableName": STUB_TABLE,
                    "Key": {"name": {"S": f"#pool#{pool}"}},
                    "UpdateExpression": f"{operation} #outside :entry",
                    "ExpressionAttributeNames": {"#outside": "outside"},
                    "ExpressionAttributeValues": {":entry": {"SS": [f"cluster={count}"]}},
                },
            )
    store = DynamoJobStore(STUB_TABLE, offline_client)

    store.record_outside("cluster", {P5: 4, G5: 1}, holding=True)
    store.record_outside("cluster", {P5: 4, G5: 1}, holding=False)


def test_replace_outside_sets_every_registered_pool(stub: Stubber, offline_client: Any) -> None:
    stub.add_response("update_item", {}, registry_update([P5]))
    stub.add_response("get_item", {"Item": {"name": {"S": "#pools"}, "pools": {"SS": [G5, P5]}}}, None)
    stub.add_response(
        "update_item",
        {},
        {
            "TableName": STUB_TABLE,
            "Key": {"name": {"S": f"#pool#{G5}"}},
            "ExpressionAttributeNames": {"#outside": "outside"},
            "UpdateExpression": "REMOVE #outside",
        },
    )
    stub.add_response(
        "update_item",
        {},
        {
            "TableName": STUB_TABLE,
            "Key": {"name": {"S": f"#pool#{P5}"}},
            "ExpressionAttributeNames": {"#outside": "outside"},
            "UpdateExpression": "SET #outside = :entries",
            "ExpressionAttributeValues": {":entries": {"SS": ["a=1", "b=2"]}},
        },
    )

    DynamoJobStore(STUB_TABLE, offline_client).replace_outside({"b": {P5: 2}, "a": {P5: 1}})
