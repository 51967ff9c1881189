"""What only the DynamoDB store does: the exact requests, no scans, consistent re-reads, retries, and
DynamoDB's throttling, failures and timeouts as ServiceUnavailable."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, ReadTimeoutError
from botocore.stub import ANY, Stubber
from smq_lambda.adapters import dynamodb_errors, dynamodb_store
from smq_lambda.adapters.dynamodb_errors import UNAVAILABLE_CODES
from smq_lambda.adapters.dynamodb_store import (
    ACTIVE_QUERY_ORDER,
    TRANSACTION_BUSY_CODES,
    UNAVAILABLE_REASONS,
    DynamoJobStore,
)
from smq_lambda.adapters.item_codec import archived, to_item
from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.domain.states import ACTIVE_STATES, JobState
from smq_lambda.errors import JobConflict, ServiceUnavailable, VersionConflict

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


def _new_name_put(new: Job) -> dict[str, Any]:
    return {
        "TableName": STUB_TABLE,
        "Item": to_item(replace(new, version=1), ttl_days=30),
        "ConditionExpression": "attribute_not_exists(#name)",
        "ExpressionAttributeNames": {"#name": "name"},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def test_create_puts_version_one_where_no_item_has_the_name(stub: Stubber, offline_client: Any) -> None:
    new = job("a")
    stub.add_response("put_item", {}, _new_name_put(new))

    assert DynamoJobStore(STUB_TABLE, offline_client).create(new) == replace(new, version=1)


def test_create_over_a_finished_job_archives_it_and_puts_the_new_one_in_one_transaction(
    stub: Stubber, offline_client: Any
) -> None:
    finished = lifecycle.cancel_pending(replace(job("a", job_id="first"), version=3), T0, by="alice")
    finished_item = to_item(finished, ttl_days=30)
    new = job("a", minute=9, job_id="second")
    stored = replace(new, version=1, earlier_job_ids=("first",))
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
                        "Item": to_item(stored, ttl_days=30),
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
    for state in ACTIVE_QUERY_ORDER:
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


# ------------------------------------------------------------------------ DynamoDB unavailable

STATES_QUERIED = 5
"""active_jobs queries the by-state index once per active state before its BatchGetItem."""


def _fail_get(stub: Stubber, code: str) -> Callable[[DynamoJobStore], object]:
    stub.add_client_error("get_item", service_error_code=code, http_status_code=400)
    return lambda store: store.get("a")


def _fail_save(stub: Stubber, code: str) -> Callable[[DynamoJobStore], object]:
    stub.add_client_error("put_item", service_error_code=code, http_status_code=400)
    current = replace(job("a"), version=1)
    return lambda store: store.save(lifecycle.start(current, T0, reason="fits"), expected_version=1)


def _fail_create(stub: Stubber, code: str) -> Callable[[DynamoJobStore], object]:
    stub.add_client_error("put_item", service_error_code=code, http_status_code=400)
    return lambda store: store.create(job("a"))


def _fail_list(stub: Stubber, code: str) -> Callable[[DynamoJobStore], object]:
    stub.add_client_error("query", service_error_code=code, http_status_code=400)
    return lambda store: store.list_jobs(states=[JobState.PENDING])


def _fail_pending_in_pool(stub: Stubber, code: str) -> Callable[[DynamoJobStore], object]:
    first_page = {"Items": [to_item(replace(job("a"), version=1), ttl_days=30)], "Count": 1, "ScannedCount": 1}
    stub.add_response("query", {**first_page, "LastEvaluatedKey": {"name": {"S": "a"}}}, None)
    stub.add_client_error("query", service_error_code=code, http_status_code=400)
    return lambda store: store.pending_in_pool("ml.g5.xlarge")


def _fail_active_jobs(stub: Stubber, code: str) -> Callable[[DynamoJobStore], object]:
    stub.add_response("query", _query_answer("a"), None)
    for _ in range(STATES_QUERIED - 1):
        stub.add_response("query", _query_answer(), None)
    stub.add_client_error("batch_get_item", service_error_code=code, http_status_code=400)
    return lambda store: store.active_jobs()


FAILING_CALLS = {
    "get": _fail_get,
    "save": _fail_save,
    "create": _fail_create,
    "list_jobs": _fail_list,
    "pending_in_pool, second page": _fail_pending_in_pool,
    "active_jobs, batch get": _fail_active_jobs,
}
UNAVAILABLE = sorted(UNAVAILABLE_CODES | TRANSACTION_BUSY_CODES)


@pytest.mark.parametrize("code", UNAVAILABLE)
@pytest.mark.parametrize("call", sorted(FAILING_CALLS))
def test_dynamodb_throttled_or_failing_is_service_unavailable(
    stub: Stubber, offline_client: Any, call: str, code: str
) -> None:
    act = FAILING_CALLS[call](stub, code)

    with pytest.raises(ServiceUnavailable) as unavailable:
        act(DynamoJobStore(STUB_TABLE, offline_client))

    assert unavailable.value.code == code
    assert unavailable.value.service == dynamodb_errors.SERVICE
    assert isinstance(unavailable.value.__cause__, ClientError)


@pytest.mark.parametrize("code", ["ValidationException", "ResourceNotFoundException", "AccessDeniedException"])
@pytest.mark.parametrize("call", sorted(FAILING_CALLS))
def test_other_dynamodb_errors_stay_as_they_are(stub: Stubber, offline_client: Any, call: str, code: str) -> None:
    act = FAILING_CALLS[call](stub, code)

    with pytest.raises(ClientError) as raised:
        act(DynamoJobStore(STUB_TABLE, offline_client))

    assert raised.value.response["Error"]["Code"] == code


def _finished_holder(stub: Stubber) -> Job:
    finished = lifecycle.cancel_pending(replace(job("a", job_id="first"), version=1), T0, by="alice")
    stub.add_client_error(
        "put_item",
        service_error_code="ConditionalCheckFailedException",
        http_status_code=400,
        modeled_fields={"Item": to_item(finished, ttl_days=30)},
    )
    return job("a", minute=1, job_id="second")


@pytest.mark.parametrize("reason", sorted(UNAVAILABLE_REASONS))
def test_a_transaction_cancelled_for_throttling_or_a_conflict_is_service_unavailable(
    stub: Stubber, offline_client: Any, reason: str
) -> None:
    new = _finished_holder(stub)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        http_status_code=400,
        modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": reason}]},
    )

    with pytest.raises(ServiceUnavailable) as unavailable:
        DynamoJobStore(STUB_TABLE, offline_client).create(new)

    assert unavailable.value.code == "TransactionCanceledException"


def test_a_transaction_cancelled_for_another_reason_stays_as_it_is(stub: Stubber, offline_client: Any) -> None:
    new = _finished_holder(stub)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        http_status_code=400,
        modeled_fields={"CancellationReasons": [{"Code": "ValidationError"}, {"Code": "None"}]},
    )

    with pytest.raises(ClientError) as raised:
        DynamoJobStore(STUB_TABLE, offline_client).create(new)

    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"


def _read_timeout(**_: Any) -> None:
    raise ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")


def _no_connection(**_: Any) -> None:
    raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")


@pytest.mark.parametrize("failure", [_read_timeout, _no_connection])
@pytest.mark.parametrize("call", ["get", "save", "create", "list_jobs", "active_jobs"])
def test_dynamodb_out_of_reach_is_service_unavailable(failure: Callable[..., None], call: str) -> None:
    client = boto3.client("dynamodb", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))
    client.meta.events.register("before-send.dynamodb", failure)
    store = DynamoJobStore(STUB_TABLE, client)
    acts: dict[str, Callable[[], object]] = {
        "get": lambda: store.get("a"),
        "save": lambda: store.save(
            lifecycle.start(replace(job("a"), version=1), T0, reason="fits"), expected_version=1
        ),
        "create": lambda: store.create(job("a")),
        "list_jobs": lambda: store.list_jobs(states=[JobState.PENDING]),
        "active_jobs": store.active_jobs,
    }

    with pytest.raises(ServiceUnavailable) as unavailable:
        acts[call]()

    assert isinstance(unavailable.value.__cause__, BotoCoreError)
    assert unavailable.value.code == type(unavailable.value.__cause__).__name__


def test_keys_left_unprocessed_round_after_round_are_service_unavailable(
    stub: Stubber, offline_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dynamodb_store.time, "sleep", lambda _: None)
    stub.add_response("query", _query_answer("a"), None)
    for _ in range(STATES_QUERIED - 1):
        stub.add_response("query", _query_answer(), None)
    unprocessed = {STUB_TABLE: {"Keys": [{"name": {"S": "a"}}], "ConsistentRead": True}}
    for _ in range(dynamodb_store.BATCH_GET_ROUNDS):
        stub.add_response("batch_get_item", {"Responses": {STUB_TABLE: []}, "UnprocessedKeys": unprocessed}, None)

    with pytest.raises(ServiceUnavailable) as unavailable:
        DynamoJobStore(STUB_TABLE, offline_client).active_jobs()

    assert unavailable.value.code == "UnprocessedKeys"


def test_active_jobs_reads_every_active_state_once() -> None:
    assert len(ACTIVE_QUERY_ORDER) == len(ACTIVE_STATES) and set(ACTIVE_QUERY_ORDER) == ACTIVE_STATES
