"""`create`'s exact requests (Stubber): the pools registered, version one put where no item has
the name, a finished job archived in one transaction; and the lost race on moto."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import archived, to_item
from smq_lambda.adapters.pending_listing import listing_changes
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.errors import JobConflict

from tests.adapters.builders import G5, P5, T0, job
from tests.adapters.dynamodb_store.support import STUB_TABLE, TTL_DAYS, registry_update
from tests.support.aws import REGION


def _new_name_put(new: Job) -> dict[str, Any]:
    return {
        "TableName": STUB_TABLE,
        "Item": to_item(replace(new, version=1), ttl_days=TTL_DAYS),
        "ConditionExpression": "attribute_not_exists(#name)",
        "ExpressionAttributeNames": {"#name": "name"},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def test_create_registers_the_pools_then_puts_version_one_where_no_item_has_the_name(
    stub: Stubber, offline_client: Any
) -> None:
    new = job("a")
    stub.add_response("update_item", {}, registry_update([G5]))
    stub.add_response("put_item", {}, _new_name_put(new))

    assert DynamoJobStore(STUB_TABLE, offline_client).create(new) == replace(new, version=1)


def test_create_registers_every_pool_of_a_heterogeneous_job_and_lists_it_in_each(
    stub: Stubber, offline_client: Any
) -> None:
    """One transaction: version one where no item has the name, and its listing item in its second
    pool (pending_listing.py)."""
    new = job("hetero", groups=[(P5, 2), (G5, 1)])
    item = to_item(replace(new, version=1), ttl_days=TTL_DAYS)
    (listed,) = listing_changes(new, item).values()
    assert listed is not None and listed["name"] == {"S": f"#listing#{G5}#hetero"}
    stub.add_response("update_item", {}, registry_update(sorted([G5, P5])))
    stub.add_response(
        "transact_write_items",
        {},
        {"TransactItems": [{"Put": _new_name_put(new)}, {"Put": {"TableName": STUB_TABLE, "Item": listed}}]},
    )

    DynamoJobStore(STUB_TABLE, offline_client).create(new)


def test_create_over_a_finished_job_archives_it_and_puts_the_new_one_in_one_transaction(
    stub: Stubber, offline_client: Any
) -> None:
    finished = lifecycle.cancel_pending(replace(job("a", job_id="first"), version=3), T0, by="alice")
    finished_item = to_item(finished, ttl_days=TTL_DAYS)
    new = job("a", minute=9, job_id="second")
    stored = replace(new, version=1, earlier_job_ids=("first",))
    stub.add_response("update_item", {}, registry_update([G5]))
    stub.add_client_error(
        "put_item",
        service_error_code="ConditionalCheckFailedException",
        http_status_code=400,
        expected_params=_new_name_put(new),
        modeled_fields={"Item": finished_item},
    )
    stub.add_response(
        "transact_write_items",
        {},
        {
            "TransactItems": [
                {"Put": {"TableName": STUB_TABLE, "Item": archived(finished_item)}},
                {
                    "Put": {
                        "TableName": STUB_TABLE,
                        "Item": to_item(stored, ttl_days=TTL_DAYS),
                        "ConditionExpression": "#job_id = :job_id AND #version = :version",
                        "ExpressionAttributeNames": {"#job_id": "job_id", "#version": "version"},
                        "ExpressionAttributeValues": {":job_id": {"S": "first"}, ":version": {"N": "4"}},
                    }
                },
            ]
        },
    )

    assert DynamoJobStore(STUB_TABLE, offline_client).create(new) == stored


def test_a_resubmission_that_loses_the_race_for_a_finished_name_conflicts(dynamodb_client: Any, table: str) -> None:
    """Another submission replaces the finished job between our read of it and our transaction."""
    store = DynamoJobStore(table, dynamodb_client)
    finished = store.create(job("contested", job_id="first"))
    finished = store.save(lifecycle.cancel_pending(finished, T0, by="alice"), expected_version=1)
    rival_store = DynamoJobStore(table, boto3.client("dynamodb", region_name=REGION))
    rivals: list[Job] = []

    def rival_submits_first(**_: Any) -> None:
        if not rivals:
            rivals.append(rival_store.create(job("contested", minute=1, job_id="rival")))

    dynamodb_client.meta.events.register("before-call.dynamodb.TransactWriteItems", rival_submits_first)
    try:
        with pytest.raises(JobConflict) as lost:
            store.create(job("contested", minute=2, job_id="late"))
    finally:
        dynamodb_client.meta.events.unregister("before-call.dynamodb.TransactWriteItems", rival_submits_first)

    assert lost.value.message == "a job named 'contested' is already pending"
    assert store.get("contested") == rivals[0]
    assert rivals[0].earlier_job_ids == ("first",)
    assert store.get("contested", job_id="first") == finished
    assert store.get("contested", job_id="late") is None
