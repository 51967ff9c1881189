"""What only the DynamoDB store does: the exact requests, no scans, consistent re-reads, retries."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import to_item
from smq_lambda.domain import lifecycle
from smq_lambda.domain.states import JobState
from smq_lambda.errors import JobConflict, VersionConflict

from tests.adapters.builders import P5, T0, job
from tests.support.aws import REGION

STUB_TABLE = "stubbed-queue"


@pytest.fixture(scope="module")
def offline_client() -> Any:
    """A client for botocore's Stubber: requests are checked and answered, never sent."""
    return boto3.client("dynamodb", region_name=REGION)


@pytest.fixture
def stub(offline_client: Any) -> Iterator[Stubber]:
    with Stubber(offline_client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def test_nothing_ever_scans(dynamodb_client: Any, table: str) -> None:
    operations: list[str] = []

    def record(model: Any, **_: Any) -> None:
        operations.append(model.name)

    dynamodb_client.meta.events.register("before-call.dynamodb", record)
    try:
        store = DynamoJobStore(table, dynamodb_client, page_size=1)
        for minute in range(3):
            store.create(job(f"j{minute}", minute=minute))
        current = store.get("j0")
        assert current is not None
        store.save(lifecycle.start(current, T0, reason="fits"), expected_version=1)
        store.active_jobs()
        store.pending_in_pool("ml.g5.xlarge")
        store.list_jobs(states=list(JobState), limit=1)
        store.list_jobs(states=[JobState.PENDING], pool="ml.g5.xlarge", owner="someone", limit=1)
    finally:
        dynamodb_client.meta.events.unregister("before-call.dynamodb", record)

    assert set(operations) == {"PutItem", "GetItem", "Query", "BatchGetItem"}


def test_create_puts_version_one_unless_an_unfinished_job_has_the_name(stub: Stubber, offline_client: Any) -> None:
    new = job("a")
    stub.add_response(
        "put_item",
        {},
        {
            "TableName": STUB_TABLE,
            "Item": to_item(replace(new, version=1), ttl_days=30),
            "ConditionExpression": "attribute_not_exists(#name) OR #state IN (:terminal0, :terminal1, :terminal2)",
            "ExpressionAttributeNames": {"#name": "name", "#state": "state"},
            "ExpressionAttributeValues": {
                ":terminal0": {"S": "cancelled"},
                ":terminal1": {"S": "completed"},
                ":terminal2": {"S": "failed"},
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    )

    DynamoJobStore(STUB_TABLE, offline_client).create(new)


def test_save_is_conditional_on_version_and_submission(stub: Stubber, offline_client: Any) -> None:
    current = replace(job("a"), version=4)
    updated = lifecycle.start(current, T0, reason="fits")
    stub.add_response(
        "put_item",
        {},
        {
            "TableName": STUB_TABLE,
            "Item": to_item(updated, ttl_days=30),
            "ConditionExpression": "#version = :expected AND #job_id = :job_id",
            "ExpressionAttributeNames": {"#version": "version", "#job_id": "job_id"},
            "ExpressionAttributeValues": {":expected": {"N": "4"}, ":job_id": {"S": current.job_id}},
        },
    )

    DynamoJobStore(STUB_TABLE, offline_client).save(updated, expected_version=4)


def test_a_lost_condition_is_raised_from_the_client_error(dynamodb_client: Any, table: str) -> None:
    store = DynamoJobStore(table, dynamodb_client)
    created = store.create(job("a"))

    with pytest.raises(VersionConflict) as lost:
        store.save(lifecycle.explain(replace(created, version=7), T0, "x"), expected_version=7)
    with pytest.raises(JobConflict) as duplicate:
        store.create(job("a", minute=1))

    assert isinstance(lost.value.__cause__, ClientError)
    assert isinstance(duplicate.value.__cause__, ClientError)
    assert duplicate.value.message == "a job named 'a' is already pending"


def test_other_dynamodb_errors_are_not_turned_into_conflicts(dynamodb_client: Any) -> None:
    store = DynamoJobStore("no-such-table", dynamodb_client)

    with pytest.raises(ClientError) as raised:
        store.create(job("a"))

    assert raised.value.response["Error"]["Code"] == "ResourceNotFoundException"


def _query_answer(*names: str) -> dict[str, Any]:
    return {"Items": [{"name": {"S": name}} for name in names], "Count": len(names), "ScannedCount": len(names)}


def test_active_jobs_reread_what_the_index_lists_from_the_base_table(stub: Stubber, offline_client: Any) -> None:
    """The index still shows `a` and `b` pending; the table knows `a` runs and `b` has finished."""
    pending_a = job("a", minute=0)
    running_a = lifecycle.mark_running(lifecycle.start(replace(pending_a, version=1), T0, reason="fits"), T0)
    cancelled_b = lifecycle.cancel_pending(replace(job("b", minute=1), version=1), T0, by="x")
    pending_c = replace(job("c", minute=2, pool=P5), version=1)
    index_answers = {"pending": _query_answer("a", "b", "c"), "running": _query_answer("a")}
    for state in ["pending", "preempting", "running", "starting", "stopping"]:
        stub.add_response(
            "query",
            index_answers.get(state, _query_answer()),
            {
                "TableName": STUB_TABLE,
                "IndexName": "by-state",
                "KeyConditionExpression": "#state = :key",
                "ExpressionAttributeValues": {":key": {"S": state}},
                "ExpressionAttributeNames": {"#state": "state", "#name": "name"},
                "ProjectionExpression": "#name",
            },
        )
    stub.add_response(
        "batch_get_item",
        {
            "Responses": {
                STUB_TABLE: [to_item(item, ttl_days=30) for item in (pending_c, cancelled_b, running_a)],
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

    active = DynamoJobStore(STUB_TABLE, offline_client).active_jobs()

    assert active == [running_a, pending_c]


def test_unprocessed_keys_are_read_again(stub: Stubber, offline_client: Any) -> None:
    pending = [replace(job(name, minute=minute), version=1) for minute, name in enumerate("ab")]
    stub.add_response("query", _query_answer("a", "b"), None)
    for _ in range(4):
        stub.add_response("query", _query_answer(), None)
    stub.add_response(
        "batch_get_item",
        {
            "Responses": {STUB_TABLE: [to_item(pending[0], ttl_days=30)]},
            "UnprocessedKeys": {STUB_TABLE: {"Keys": [{"name": {"S": "b"}}], "ConsistentRead": True}},
        },
        {"RequestItems": {STUB_TABLE: {"Keys": ANY, "ConsistentRead": True}}},
    )
    stub.add_response(
        "batch_get_item",
        {"Responses": {STUB_TABLE: [to_item(pending[1], ttl_days=30)]}},
        {"RequestItems": {STUB_TABLE: {"Keys": [{"name": {"S": "b"}}], "ConsistentRead": True}}},
    )

    assert DynamoJobStore(STUB_TABLE, offline_client).active_jobs() == pending


def test_active_jobs_read_more_than_one_batch(dynamodb_client: Any, table: str) -> None:
    jobs = [replace(job(f"j{index:03d}", minute=index), version=1) for index in range(105)]
    for start in range(0, len(jobs), 25):
        dynamodb_client.batch_write_item(
            RequestItems={
                table: [{"PutRequest": {"Item": to_item(each, ttl_days=30)}} for each in jobs[start : start + 25]]
            }
        )

    active = DynamoJobStore(table, dynamodb_client).active_jobs()

    assert active == jobs
