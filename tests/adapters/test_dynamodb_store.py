"""What only the DynamoDB store does: the exact requests, no scans, reads by key, the pools' usage
items kept in step with the jobs by transactions, retries, and DynamoDB's throttling, failures and
timeouts as ServiceUnavailable.

The Stubber answers requests without sending them, after botocore has validated each against the
DynamoDB model; the moto tests run the same store against the template's table.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, ReadTimeoutError
from botocore.stub import ANY, Stubber
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from smq_lambda.adapters import dynamodb_errors, dynamodb_store, dynamodb_table
from smq_lambda.adapters.dynamodb_errors import UNAVAILABLE_CODES
from smq_lambda.adapters.dynamodb_pool_holders import pool_key
from smq_lambda.adapters.dynamodb_store import SAVE_ROUNDS, DynamoJobStore
from smq_lambda.adapters.dynamodb_table import TRANSACTION_BUSY_CODES, UNAVAILABLE_REASONS
from smq_lambda.adapters.item_codec import (
    IMMUTABLE_ATTRIBUTES,
    OPTIONAL_ATTRIBUTES,
    archived,
    from_item,
    job_order_key,
    to_item,
)
from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.domain.outcomes import AttemptOutcome
from smq_lambda.domain.states import ENTERED_ONLY_WHILE_LIVE, LIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import JobConflict, ServiceUnavailable, VersionConflict
from smq_lambda.ports import InUse

from tests.adapters.builders import ALICE, G5, P5, T0, job, request
from tests.support.aws import REGION, create_queue_table, pending_index_attributes

STUB_TABLE = "stubbed-queue"
TTL_DAYS = 30


@pytest.fixture(scope="module")
def offline_client() -> Any:
    """A client for botocore's Stubber: requests are checked and answered, never sent."""
    return boto3.client("dynamodb", region_name=REGION)


@pytest.fixture
def stub(offline_client: Any) -> Iterator[Stubber]:
    with Stubber(offline_client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's backoff between rounds (unprocessed keys, transaction conflicts), without its sleeps."""
    monkeypatch.setattr(dynamodb_store.time, "sleep", lambda _seconds: None)


class Requests:
    """Every request a client makes, as the caller gave it (before botocore adds anything)."""

    def __init__(self, client: Any) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self._client = client
        client.meta.events.register("provide-client-params.dynamodb", self._record)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.sent.append((model.name, copy.deepcopy(params)))

    def of(self, *operations: str) -> list[dict[str, Any]]:
        return [params for operation, params in self.sent if operation in operations]

    def operations(self) -> list[str]:
        return [operation for operation, _ in self.sent]

    def close(self) -> None:
        self._client.meta.events.unregister("provide-client-params.dynamodb", self._record)


@pytest.fixture
def requests_to(dynamodb_client: Any) -> Iterator[Requests]:
    recorder = Requests(dynamodb_client)
    yield recorder
    recorder.close()


@pytest.fixture
def store(dynamodb_client: Any, table: str) -> DynamoJobStore:
    return DynamoJobStore(table, dynamodb_client, ttl_days=TTL_DAYS, page_size=2)


def raw(client: Any, table: str, key: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = client.get_item(TableName=table, Key={"name": {"S": key}}, ConsistentRead=True).get(
        "Item"
    )
    return item


def live_set(client: Any, table: str, pool: str) -> set[str]:
    """The names a pool's usage item lists as live."""
    item = raw(client, table, pool_key(pool)) or {}
    return set(item.get("live", {}).get("SS", []))


def started(current: Job) -> Job:
    """The same attempt, random name part included, however often it is asked for."""
    return lifecycle.start(current, T0, reason="fits", nonce="0123456789ab")


def running(current: Job) -> Job:
    return lifecycle.mark_running(current, T0)


# ------------------------------------------------------------------------ no scans


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
    store.pending_window(G5, 5)
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
    """A window is one bounded Query; listings use the by-state index; only counts read far."""
    store = DynamoJobStore(table, dynamodb_client)
    for minute in range(6):
        store.create(job(f"j{minute}", minute=minute))

    window = store.pending_window(G5, 2)
    store.list_jobs(states=[JobState.PENDING], pool=G5)

    assert [each.name for each in window] == ["j0", "j1"]
    window_query, listing = requests_to.of("Query")
    assert window_query["IndexName"] == "pending-by-pool"
    assert window_query["Limit"] == 2
    assert listing["IndexName"] == "by-state"


# ------------------------------------------------------------------------ create


def _registry_update(pools: list[str]) -> dict[str, Any]:
    return {
        "TableName": STUB_TABLE,
        "Key": {"name": {"S": "#pools"}},
        "UpdateExpression": "ADD #pools :pools",
        "ExpressionAttributeNames": {"#pools": "pools"},
        "ExpressionAttributeValues": {":pools": {"SS": pools}},
    }


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
    stub.add_response("update_item", {}, _registry_update([G5]))
    stub.add_response("put_item", {}, _new_name_put(new))

    assert DynamoJobStore(STUB_TABLE, offline_client).create(new) == replace(new, version=1)


def test_create_registers_every_pool_of_a_heterogeneous_job(stub: Stubber, offline_client: Any) -> None:
    new = job("hetero", groups=[(P5, 2), (G5, 1)])
    stub.add_response("update_item", {}, _registry_update(sorted([G5, P5])))
    stub.add_response("put_item", {}, _new_name_put(new))

    DynamoJobStore(STUB_TABLE, offline_client).create(new)


def test_create_over_a_finished_job_archives_it_and_puts_the_new_one_in_one_transaction(
    stub: Stubber, offline_client: Any
) -> None:
    finished = lifecycle.cancel_pending(replace(job("a", job_id="first"), version=3), T0, by="alice")
    finished_item = to_item(finished, ttl_days=TTL_DAYS)
    new = job("a", minute=9, job_id="second")
    stored = replace(new, version=1, earlier_job_ids=("first",))
    stub.add_response("update_item", {}, _registry_update([G5]))
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


# ------------------------------------------------------------------------ save: the requests


_SET = re.compile(r"(#\w+) = (:\w+)")


def interpret(update: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """What an UpdateItem request does to a job's item: the attributes it sets (to their values) and
    the ones it removes, with every placeholder resolved. Only the SET and REMOVE forms a save uses."""
    names, values = update["ExpressionAttributeNames"], update["ExpressionAttributeValues"]
    expression = update["UpdateExpression"]
    assert expression.startswith("SET "), expression
    sets_part, _, removes_part = expression.removeprefix("SET ").partition(" REMOVE ")
    clauses = sets_part.split(", ")
    sets = {}
    for clause in clauses:
        match = _SET.fullmatch(clause)
        assert match is not None, clause
        sets[names[match[1]]] = values[match[2]]
    removes = {names[placeholder] for placeholder in removes_part.split(", ") if placeholder}
    return sets, removes


def assert_updates_to(update: Mapping[str, Any], job_now: Job, expected_version: int) -> None:
    """`update` turns the stored item of the same submission at `expected_version` into `job_now`'s,
    changing no attribute `create` set for good (the request above all)."""
    item = to_item(job_now, ttl_days=TTL_DAYS)
    sets, removes = interpret(update)
    assert update["TableName"] == STUB_TABLE
    assert update["Key"] == {"name": {"S": job_now.name}}
    assert update["ConditionExpression"] == "#version = :expected AND #job_id = :job_id"
    assert update["ExpressionAttributeNames"]["#version"] == "version"
    assert update["ExpressionAttributeNames"]["#job_id"] == "job_id"
    assert update["ExpressionAttributeValues"][":expected"] == {"N": str(expected_version)}
    assert update["ExpressionAttributeValues"][":job_id"] == {"S": job_now.job_id}
    assert sets == {name: value for name, value in item.items() if name not in {*IMMUTABLE_ATTRIBUTES, "request"}}
    assert removes == set(OPTIONAL_ATTRIBUTES) - set(item)
    assert "request" not in update["ExpressionAttributeNames"].values()


@pytest.fixture
def sent(offline_client: Any) -> Iterator[Requests]:
    """What the stubbed client is asked, as the store asked it (botocore validates it, the Stubber answers)."""
    recorder = Requests(offline_client)
    yield recorder
    recorder.close()


def test_save_of_a_job_that_never_had_an_attempt_is_one_conditional_update_item(
    stub: Stubber, offline_client: Any, sent: Requests
) -> None:
    """A job that never started was never live: no pool's usage item changes."""
    current = replace(job("a"), version=4)
    explained = lifecycle.reprioritize(lifecycle.explain(current, T0, "waits"), T0, 3, by=ALICE)
    explained = replace(explained, version=5)
    store = DynamoJobStore(STUB_TABLE, offline_client)
    read_first(stub, store, current, sent)
    stub.add_response("update_item", {}, None)

    saved = store.save(explained, expected_version=4)

    (update,) = sent.of("UpdateItem")
    assert sent.operations() == ["UpdateItem"]
    assert saved == explained
    assert_updates_to(update, explained, 4)
    assert interpret(update)[0]["pending_pool"] == {"S": G5}
    assert "expires_at" in interpret(update)[1] and "not_before" in interpret(update)[1]


LIVE_STEPS: dict[str, tuple[Callable[[Job], Job], ...]] = {
    "start": (started,),
    "running": (started, running),
    "preempting": (started, running, lambda c: lifecycle.request_stop(c, T0, preempt=True, reason="p")),
    "stopping": (started, running, lambda c: lifecycle.request_stop(c, T0, preempt=False, reason="c")),
}
NOT_LIVE_STEPS: dict[str, tuple[Callable[[Job], Job], ...]] = {
    "requeued": (*LIVE_STEPS["preempting"], lambda c: lifecycle.requeue(c, T0, outcome="preempted", reason="p")),
    "refused for a while": (started, lambda c: lifecycle.refuse_start(c, T0, reason="r", lasting=False)),
    "refused for good": (started, lambda c: lifecycle.refuse_start(c, T0, reason="r", lasting=True)),
    "completed": (
        started,
        running,
        lambda c: lifecycle.finish(c, JobState.COMPLETED, T0, outcome="completed", reason=None),
    ),
    "cancelled": (*LIVE_STEPS["stopping"], lambda c: lifecycle.end_stopped(c, T0)),
}


def read_first(stub: Stubber, store: DynamoJobStore, current: Job, sent: Requests) -> None:
    """The store reads the job before it saves it, as every caller does: it then knows the stored
    request and does not send it again."""
    stub.add_response("get_item", {"Item": to_item(current, ttl_days=30)}, None)
    assert store.get(current.name) == current
    sent.sent.clear()


def _after(steps: tuple[Callable[[Job], Job], ...], first: Job) -> tuple[Job, Job]:
    """The job before and after the last of `steps`."""
    before = first
    for step in steps[:-1]:
        before = step(before)
    return before, steps[-1](before)


STAYING_LIVE = {name for name, steps in LIVE_STEPS.items() if name != "start"}
"""Steps into running, preempting or stopping, which only live jobs take (states.ENTERED_ONLY_WHILE_LIVE)."""


@pytest.mark.parametrize("name", sorted(STAYING_LIVE))
def test_save_of_a_job_that_stays_live_is_one_conditional_update_item(
    stub: Stubber, offline_client: Any, sent: Requests, name: str
) -> None:
    before, after = _after(LIVE_STEPS[name], replace(job("hetero", groups=[(P5, 2), (G5, 1)]), version=1))
    assert after.state in ENTERED_ONLY_WHILE_LIVE
    store = DynamoJobStore(STUB_TABLE, offline_client)
    read_first(stub, store, before, sent)
    stub.add_response("update_item", {}, None)

    store.save(after, expected_version=before.version)

    assert sent.operations() == ["UpdateItem"]
    assert_updates_to(sent.of("UpdateItem")[0], after, before.version)


@pytest.mark.parametrize(
    ("steps", "operation"),
    [(LIVE_STEPS["start"], "ADD")] + [*((NOT_LIVE_STEPS[name], "DELETE") for name in sorted(NOT_LIVE_STEPS))],
    ids=["start", *sorted(NOT_LIVE_STEPS)],
)
def test_save_of_a_job_with_attempts_changes_it_and_every_pools_live_set_in_one_transaction(
    stub: Stubber,
    offline_client: Any,
    sent: Requests,
    steps: tuple[Callable[[Job], Job], ...],
    operation: str,
) -> None:
    before, after = _after(steps, replace(job("hetero", groups=[(P5, 2), (G5, 1)]), version=1))
    store = DynamoJobStore(STUB_TABLE, offline_client)
    read_first(stub, store, before, sent)
    stub.add_response("transact_write_items", {}, None)

    store.save(after, expected_version=before.version)

    assert sent.operations() == ["TransactWriteItems"]
    (transaction,) = sent.of("TransactWriteItems")
    job_update, *pool_updates = transaction["TransactItems"]
    assert_updates_to(job_update["Update"], after, before.version)
    assert pool_updates == [
        {
            "Update": {
                "TableName": STUB_TABLE,
                "Key": {"name": {"S": f"#pool#{pool}"}},
                "UpdateExpression": f"{operation} #live :member",
                "ExpressionAttributeNames": {"#live": "live"},
                "ExpressionAttributeValues": {":member": {"SS": ["hetero"]}},
            }
        }
        for pool in (P5, G5)
    ]


def test_a_transaction_whose_job_condition_failed_is_a_version_conflict(stub: Stubber, offline_client: Any) -> None:
    current = replace(job("a"), version=1)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        http_status_code=400,
        modeled_fields={"CancellationReasons": [{"Code": "ConditionalCheckFailed"}, {"Code": "None"}]},
    )

    with pytest.raises(VersionConflict) as lost:
        DynamoJobStore(STUB_TABLE, offline_client).save(started(current), expected_version=1)

    assert isinstance(lost.value.__cause__, ClientError)


@pytest.mark.parametrize("failures", range(1, SAVE_ROUNDS))
def test_a_transaction_that_met_another_is_tried_again(stub: Stubber, offline_client: Any, failures: int) -> None:
    """Two saves of jobs of one pool meet on its usage item: the loser changed nothing and goes again."""
    current = replace(job("a"), version=1)
    for _ in range(failures):
        stub.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            http_status_code=400,
            modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]},
        )
    stub.add_response("transact_write_items", {}, None)

    saved = DynamoJobStore(STUB_TABLE, offline_client).save(started(current), expected_version=1)

    assert saved == started(current)


@pytest.mark.parametrize("code", sorted(UNAVAILABLE_CODES | TRANSACTION_BUSY_CODES))
def test_a_transaction_busy_every_round_is_service_unavailable(stub: Stubber, offline_client: Any, code: str) -> None:
    current = replace(job("a"), version=1)
    for _ in range(SAVE_ROUNDS):
        stub.add_client_error("transact_write_items", service_error_code=code, http_status_code=400)

    with pytest.raises(ServiceUnavailable) as unavailable:
        DynamoJobStore(STUB_TABLE, offline_client).save(started(current), expected_version=1)

    assert unavailable.value.code == code


def test_a_save_transaction_cancelled_for_another_reason_stays_as_it_is(stub: Stubber, offline_client: Any) -> None:
    current = replace(job("a"), version=1)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        http_status_code=400,
        modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": "ValidationError"}]},
    )

    with pytest.raises(ClientError) as raised:
        DynamoJobStore(STUB_TABLE, offline_client).save(started(current), expected_version=1)

    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"


# ------------------------------------------------------------------------ save: on moto


BIG_HYPERPARAMETERS = {f"param_{index:04d}": "x" * 200 for index in range(400)}
"""About 90 KB of request: what a save must not send again."""


def test_saves_send_the_request_only_when_it_changed(
    store: DynamoJobStore, dynamodb_client: Any, table: str, requests_to: Requests
) -> None:
    body = {**request("big"), "HyperParameters": BIG_HYPERPARAMETERS}
    created = store.create(replace(job("big"), request=body))
    request_text = json.dumps(body, separators=(",", ":"))
    creates = len(requests_to.sent)

    current = created
    for step in (
        lambda c: lifecycle.explain(c, T0, "waits"),
        started,
        running,
        lambda c: lifecycle.request_stop(c, T0, preempt=True, reason="p"),
        lambda c: lifecycle.requeue(c, T0, outcome="preempted", reason="p"),
        lambda c: lifecycle.cancel_pending(c, T0, by=ALICE),
    ):
        current = store.save(step(current), expected_version=current.version)

    saves = requests_to.sent[creates:]
    assert {operation for operation, _ in saves} == {"UpdateItem", "TransactWriteItems"}
    for _, params in saves:
        text = json.dumps(params)
        assert '"request"' not in text
        assert len(text) < 10_000 < len(request_text)
    loaded = store.get("big")
    assert loaded == current and loaded is not None and loaded.request == body
    stored = raw(dynamodb_client, table, "big")
    assert stored == to_item(current, ttl_days=TTL_DAYS)


def test_a_saved_item_is_exactly_the_jobs_item(store: DynamoJobStore, dynamodb_client: Any, table: str) -> None:
    """Every attribute a save leaves is the job's: optional ones it no longer has are removed."""
    store.create(job("a"))
    current = store.get("a")
    assert current is not None
    items = []
    for step in (
        lambda c: lifecycle.reprioritize(c, T0, 4, by=ALICE),
        started,
        lambda c: lifecycle.refuse_start(c, T0, reason="CapacityError", lasting=False),
        started,
        running,
        lambda c: lifecycle.stop_for_governance(c, T0, outcome=AttemptOutcome.IDLE_GPU, reason="idle GPU"),
        lambda c: lifecycle.end_stopped(c, T0),
    ):
        current = store.save(step(current), expected_version=current.version)
        items.append(raw(dynamodb_client, table, "a") == to_item(current, ttl_days=TTL_DAYS))

    assert items == [True] * len(items)


def test_a_lost_condition_is_raised_from_the_client_error(store: DynamoJobStore) -> None:
    created = store.create(job("a"))
    live = store.create(job("b"))

    with pytest.raises(VersionConflict) as lost:
        store.save(lifecycle.explain(replace(created, version=7), T0, "x"), expected_version=7)
    with pytest.raises(VersionConflict) as lost_in_transaction:
        store.save(started(replace(live, version=7)), expected_version=7)
    with pytest.raises(JobConflict) as duplicate:
        store.create(job("a", minute=1))

    assert isinstance(lost.value.__cause__, ClientError)
    assert isinstance(lost_in_transaction.value.__cause__, ClientError)
    assert lost_in_transaction.value.__cause__.response["Error"]["Code"] == "TransactionCanceledException"
    assert isinstance(duplicate.value.__cause__, ClientError)
    assert duplicate.value.message == "a job named 'a' is already pending"


@pytest.mark.parametrize(
    ("stored_steps", "stale_step"),
    [
        pytest.param(
            (started, running, lambda c: lifecycle.request_stop(c, T0, preempt=True, reason="p")),
            lambda c: lifecycle.refuse_start(c, T0, reason="r", lasting=False),
            id="live-stays-live",
        ),
        pytest.param(
            (started, running, lambda c: lifecycle.requeue(c, T0, outcome="preempted", reason="p")),
            lambda c: lifecycle.request_stop(c, T0, preempt=True, reason="p"),
            id="requeued-stays-out",
        ),
    ],
)
def test_a_save_whose_condition_fails_changes_no_live_set(
    store: DynamoJobStore,
    dynamodb_client: Any,
    table: str,
    stored_steps: tuple[Callable[[Job], Job], ...],
    stale_step: Callable[[Job], Job],
) -> None:
    """The job's update and its pools' `live` changes are one transaction: a stale writer changes
    neither (it would otherwise take a live job out of the count, or put a pending one in)."""
    store.create(job("hetero", groups=[(G5, 1), (P5, 2)]))
    current = store.get("hetero")
    assert current is not None
    views = [current]
    for step in stored_steps:
        current = store.save(step(current), expected_version=current.version)
        views.append(current)
    stale = views[-2]
    before = {pool: live_set(dynamodb_client, table, pool) for pool in (G5, P5)}
    item_before = raw(dynamodb_client, table, "hetero")

    with pytest.raises(VersionConflict):
        store.save(stale_step(stale), expected_version=stale.version)

    assert {pool: live_set(dynamodb_client, table, pool) for pool in (G5, P5)} == before
    assert before == ({G5: {"hetero"}, P5: {"hetero"}} if current.is_live else {G5: set(), P5: set()})
    assert raw(dynamodb_client, table, "hetero") == item_before
    assert store.in_use().live == ([current] if current.is_live else [])


def test_a_transaction_that_lost_the_race_to_an_earlier_job_of_the_name_changes_no_live_set(
    store: DynamoJobStore, dynamodb_client: Any, table: str
) -> None:
    """A writer still holding a finished job of a reused name: the job id condition fails the whole
    transaction, so the new job (pending) is not counted as live."""
    old = store.create(job("reused"))
    old_starting = store.save(started(old), expected_version=old.version)
    old_running = store.save(running(old_starting), expected_version=old_starting.version)
    done = lifecycle.finish(old_running, JobState.COMPLETED, T0, outcome="completed", reason=None)
    store.save(done, expected_version=old_running.version)
    store.create(job("reused", minute=5, job_id="new"))

    with pytest.raises(VersionConflict):
        store.save(
            lifecycle.request_stop(old_running, T0, preempt=True, reason="p"), expected_version=old_running.version
        )

    assert live_set(dynamodb_client, table, G5) == set()
    assert store.in_use().live == []


# ------------------------------------------------------------------------ in_use


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


def _registry_and_pool(stub: Stubber, *live: str) -> None:
    stub.add_response("get_item", {"Item": {"name": {"S": "#pools"}, "pools": {"SS": [G5]}}}, None)
    stub.add_response(
        "batch_get_item",
        {"Responses": {STUB_TABLE: [{"name": {"S": f"#pool#{G5}"}, "live": {"SS": list(live)}}]}},
        None,
    )


def test_unprocessed_keys_are_read_again(stub: Stubber, offline_client: Any) -> None:
    live = [running(started(replace(job(name, minute=minute), version=1))) for minute, name in enumerate("ab")]
    _registry_and_pool(stub, "a", "b")
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
    _registry_and_pool(stub, "a")
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


# ------------------------------------------------------------------------ in_use: any lifecycle

NAMES = ("g5-job", "p5-job", "hetero")


def _submission(name: str, minute: int, job_id: str) -> Job:
    shapes: dict[str, dict[str, Any]] = {
        "g5-job": {"pool": G5},
        "p5-job": {"pool": P5, "instances": 2},
        "hetero": {"groups": [(P5, 1), (G5, 2)]},
    }
    return job(name, minute=minute, job_id=job_id, **shapes[name])


def stop(current: Job) -> Job:
    return lifecycle.request_stop(current, T0, preempt=False, reason="cancelled")


def preempt(current: Job) -> Job:
    return lifecycle.request_stop(current, T0, preempt=True, reason="preempted")


def complete(current: Job) -> Job:
    return lifecycle.finish(current, JobState.COMPLETED, T0, outcome="completed", reason=None)


def fail(current: Job) -> Job:
    return lifecycle.finish(current, JobState.FAILED, T0, outcome="failed", reason="boom")


def _moves(state: JobState) -> list[Callable[[Job], Job]]:
    """Every change the services make to a job in `state` (terminal: none; it is submitted again)."""
    moves: dict[JobState, list[Callable[[Job], Job]]] = {
        JobState.PENDING: [
            started,
            lambda c: lifecycle.cancel_pending(c, T0, by=ALICE),
            lambda c: lifecycle.explain(c, T0, "waits"),
            lambda c: lifecycle.reprioritize(c, T0, c.priority + 1, by=ALICE),
        ],
        JobState.STARTING: [
            running,
            lambda c: lifecycle.refuse_start(c, T0, reason="CapacityError", lasting=False),
            lambda c: lifecycle.refuse_start(c, T0, reason="ValidationException", lasting=True),
            preempt,
            stop,
            fail,
        ],
        JobState.RUNNING: [
            preempt,
            stop,
            complete,
            fail,
            lambda c: lifecycle.retry_failed(c, T0, reason="InternalServerError"),
            lambda c: lifecycle.stop_for_governance(c, T0, outcome=AttemptOutcome.IDLE_GPU, reason="idle GPU"),
        ],
        JobState.PREEMPTING: [
            lambda c: lifecycle.requeue(c, T0, outcome="preempted", reason="preempted"),
            stop,
            complete,
        ],
        JobState.STOPPING: [lambda c: lifecycle.end_stopped(c, T0), complete],
    }
    return moves.get(state, [])


STEPS = st.lists(
    st.tuples(st.sampled_from(NAMES), st.integers(0, 5), st.booleans()),
    min_size=1,
    max_size=10,
)


def _stored(client: Any, table: str) -> tuple[list[Job], dict[str, set[str]]]:
    """The live jobs in scheduling order and each pool's live set, read together in one strongly
    consistent BatchGetItem; asserts that each pool's set names exactly the live jobs holding it."""
    keys = [*NAMES, pool_key(G5), pool_key(P5)]
    items = client.batch_get_item(
        RequestItems={table: {"Keys": [{"name": {"S": key}} for key in keys], "ConsistentRead": True}}
    )["Responses"][table]
    by_key = {item["name"]["S"]: item for item in items}
    live = sorted(
        (from_item(by_key[name]) for name in NAMES if by_key[name]["state"]["S"] in LIVE_STATES), key=job_order_key
    )
    sets = {pool: set(by_key.get(pool_key(pool), {}).get("live", {}).get("SS", [])) for pool in (G5, P5)}
    assert sets == {pool: {each.name for each in live if pool in each.demand} for pool in (G5, P5)}
    return live, sets


@settings(
    max_examples=max(settings.default.max_examples // 12, 5),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_in_use_is_exactly_the_stored_live_jobs_after_any_lifecycle(
    dynamodb_client: Any, steps: list[tuple[str, int, bool]]
) -> None:
    """Whatever the services do to three jobs (one in both pools), in whatever order, with stale
    writers losing races on the way and finished names submitted again, `in_use().live` is exactly
    the jobs whose stored state is live, and each pool's live set names exactly those holding it."""
    table = create_queue_table(dynamodb_client, f"smq-prop-{uuid.uuid4().hex[:8]}")
    store = DynamoJobStore(table, dynamodb_client, ttl_days=TTL_DAYS)
    for minute, name in enumerate(NAMES):
        store.create(_submission(name, minute, f"{name}-0"))
    submissions = dict.fromkeys(NAMES, 0)
    try:
        for name, choice, stale_first in steps:
            current = store.get(name)
            assert current is not None
            if current.state in TERMINAL_STATES:
                submissions[name] += 1
                store.create(_submission(name, 10 + submissions[name], f"{name}-{submissions[name]}"))
                _stored(dynamodb_client, table)
                continue
            moves = _moves(current.state)
            updated = moves[choice % len(moves)](current)
            if stale_first:
                before = _stored(dynamodb_client, table)
                with pytest.raises(VersionConflict):
                    store.save(replace(updated, version=current.version), expected_version=current.version - 1)
                assert _stored(dynamodb_client, table) == before
            store.save(updated, expected_version=current.version)
            _stored(dynamodb_client, table)
        assert store.in_use().live == _stored(dynamodb_client, table)[0]
    finally:
        dynamodb_client.delete_table(TableName=table)


# ------------------------------------------------------------------------ pending_window and count_pending


def _projected(each: Job) -> dict[str, Any]:
    """A job's item as the pending index holds it."""
    return {key: value for key, value in to_item(each, ttl_days=TTL_DAYS).items() if key in pending_index_attributes()}


def _window_query(limit: int, **extra: Any) -> dict[str, Any]:
    return {
        "TableName": STUB_TABLE,
        "IndexName": "pending-by-pool",
        "KeyConditionExpression": "#pending_pool = :key",
        "ExpressionAttributeValues": {":key": {"S": G5}},
        "ExpressionAttributeNames": {"#pending_pool": "pending_pool"},
        "Limit": limit,
        **extra,
    }


def test_pending_window_queries_no_further_than_its_limit(stub: Stubber, offline_client: Any) -> None:
    pending = [replace(job(f"j{index}", minute=index), version=1) for index in range(4)]
    last_key = {"name": {"S": "j1"}, "pending_pool": {"S": G5}, "order_key": {"S": job_order_key(pending[1])}}
    stub.add_response(
        "query",
        {"Items": [_projected(each) for each in pending[:2]], "Count": 2, "LastEvaluatedKey": last_key},
        _window_query(3),
    )
    stub.add_response(
        "query",
        {"Items": [_projected(each) for each in pending[2:]], "Count": 2, "LastEvaluatedKey": {"name": {"S": "j3"}}},
        _window_query(3, ExclusiveStartKey=last_key),
    )

    window = DynamoJobStore(STUB_TABLE, offline_client).pending_window(G5, 3)

    assert window == pending[:3]
    assert all(each.request == {} and each.history == () for each in window)


def test_pending_window_reads_pages_no_larger_than_the_stores(stub: Stubber, offline_client: Any) -> None:
    stub.add_response("query", {"Items": [], "Count": 0}, _window_query(2))

    assert DynamoJobStore(STUB_TABLE, offline_client, page_size=2).pending_window(G5, 50) == []


@pytest.mark.parametrize("limit", [0, -1])
def test_an_empty_window_reads_nothing(stub: Stubber, offline_client: Any, limit: int) -> None:
    assert DynamoJobStore(STUB_TABLE, offline_client).pending_window(G5, limit) == []


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


# ------------------------------------------------------------------------ outside the queue


def test_record_outside_adds_and_deletes_the_jobs_entry_in_each_pool(stub: Stubber, offline_client: Any) -> None:
    stub.add_response("update_item", {}, _registry_update(sorted([G5, P5])))
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
    stub.add_response("update_item", {}, _registry_update([P5]))
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


# ------------------------------------------------------------------------ DynamoDB unavailable


def _errors(stub: Stubber, operation: str, code: str, *, rounds: int = 1) -> None:
    """`rounds` errors when the code means "not now" (the store tries again), else one."""
    retried = code in UNAVAILABLE_CODES | TRANSACTION_BUSY_CODES
    for _ in range(rounds if retried else 1):
        stub.add_client_error(operation, service_error_code=code, http_status_code=400)


Act = Callable[[DynamoJobStore], object]


def _fail_get(stub: Stubber, code: str) -> Act:
    _errors(stub, "get_item", code)
    return lambda store: store.get("a")


def _fail_save(stub: Stubber, code: str) -> Act:
    _errors(stub, "update_item", code)
    current = replace(job("a"), version=1)
    return lambda store: store.save(lifecycle.explain(current, T0, "waits"), expected_version=1)


def _fail_save_transaction(stub: Stubber, code: str) -> Act:
    _errors(stub, "transact_write_items", code, rounds=SAVE_ROUNDS)
    current = replace(job("a"), version=1)
    return lambda store: store.save(started(current), expected_version=1)


def _fail_create_registry(stub: Stubber, code: str) -> Act:
    _errors(stub, "update_item", code)
    return lambda store: store.create(job("a"))


def _fail_create(stub: Stubber, code: str) -> Act:
    stub.add_response("update_item", {}, None)
    _errors(stub, "put_item", code)
    return lambda store: store.create(job("a"))


def _fail_list(stub: Stubber, code: str) -> Act:
    _errors(stub, "query", code)
    return lambda store: store.list_jobs(states=[JobState.PENDING])


def _fail_pending_window(stub: Stubber, code: str) -> Act:
    first_page = {"Items": [_projected(replace(job("a"), version=1))], "Count": 1, "ScannedCount": 1}
    stub.add_response("query", {**first_page, "LastEvaluatedKey": {"name": {"S": "a"}}}, None)
    _errors(stub, "query", code)
    return lambda store: store.pending_window(G5, 5)


def _fail_count_pending(stub: Stubber, code: str) -> Act:
    stub.add_response("query", {"Count": 1, "ScannedCount": 1, "LastEvaluatedKey": {"name": {"S": "a"}}}, None)
    _errors(stub, "query", code)
    return lambda store: store.count_pending(G5)


def _fail_in_use_registry(stub: Stubber, code: str) -> Act:
    _errors(stub, "get_item", code)
    return lambda store: store.in_use()


def _fail_in_use_pools(stub: Stubber, code: str) -> Act:
    stub.add_response("get_item", {"Item": {"name": {"S": "#pools"}, "pools": {"SS": [G5]}}}, None)
    _errors(stub, "batch_get_item", code)
    return lambda store: store.in_use()


def _fail_in_use_jobs(stub: Stubber, code: str) -> Act:
    _registry_and_pool(stub, "a")
    _errors(stub, "batch_get_item", code)
    return lambda store: store.in_use()


def _fail_record_outside(stub: Stubber, code: str) -> Act:
    stub.add_response("update_item", {}, None)
    _errors(stub, "update_item", code)
    return lambda store: store.record_outside("by-hand", {G5: 1}, holding=True)


def _fail_replace_outside(stub: Stubber, code: str) -> Act:
    _errors(stub, "get_item", code)
    return lambda store: store.replace_outside({})


FAILING_CALLS: dict[str, Callable[[Stubber, str], Act]] = {
    "get": _fail_get,
    "save": _fail_save,
    "save, transaction": _fail_save_transaction,
    "create, registry": _fail_create_registry,
    "create": _fail_create,
    "list_jobs": _fail_list,
    "pending_window, second page": _fail_pending_window,
    "count_pending, second page": _fail_count_pending,
    "in_use, registry": _fail_in_use_registry,
    "in_use, pool items": _fail_in_use_pools,
    "in_use, live jobs": _fail_in_use_jobs,
    "record_outside": _fail_record_outside,
    "replace_outside": _fail_replace_outside,
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


def test_other_dynamodb_errors_are_not_turned_into_conflicts(dynamodb_client: Any) -> None:
    store = DynamoJobStore("no-such-table", dynamodb_client)

    with pytest.raises(ClientError) as raised:
        store.create(job("a"))

    assert raised.value.response["Error"]["Code"] == "ResourceNotFoundException"


def _finished_holder(stub: Stubber) -> Job:
    finished = lifecycle.cancel_pending(replace(job("a", job_id="first"), version=1), T0, by="alice")
    stub.add_response("update_item", {}, None)
    stub.add_client_error(
        "put_item",
        service_error_code="ConditionalCheckFailedException",
        http_status_code=400,
        modeled_fields={"Item": to_item(finished, ttl_days=TTL_DAYS)},
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


@pytest.mark.parametrize("reason", sorted(UNAVAILABLE_REASONS))
def test_a_save_transaction_cancelled_for_throttling_or_a_conflict_every_round_is_service_unavailable(
    stub: Stubber, offline_client: Any, reason: str
) -> None:
    for _ in range(SAVE_ROUNDS):
        stub.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            http_status_code=400,
            modeled_fields={"CancellationReasons": [{"Code": "None"}, {"Code": reason}]},
        )

    with pytest.raises(ServiceUnavailable) as unavailable:
        DynamoJobStore(STUB_TABLE, offline_client).save(started(replace(job("a"), version=1)), expected_version=1)

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


OUT_OF_REACH_CALLS: dict[str, Act] = {
    "get": lambda store: store.get("a"),
    "save": lambda store: store.save(lifecycle.explain(replace(job("a"), version=1), T0, "waits"), expected_version=1),
    "save, transaction": lambda store: store.save(started(replace(job("a"), version=1)), expected_version=1),
    "create": lambda store: store.create(job("a")),
    "list_jobs": lambda store: store.list_jobs(states=[JobState.PENDING]),
    "in_use": lambda store: store.in_use(),
    "pending_window": lambda store: store.pending_window(G5, 5),
    "count_pending": lambda store: store.count_pending(G5, after="a", before="b"),
    "record_outside": lambda store: store.record_outside("by-hand", {G5: 1}, holding=False),
    "replace_outside": lambda store: store.replace_outside({"by-hand": {G5: 1}}),
}


@pytest.mark.parametrize("failure", [_read_timeout, _no_connection])
@pytest.mark.parametrize("call", sorted(OUT_OF_REACH_CALLS))
def test_dynamodb_out_of_reach_is_service_unavailable(failure: Callable[..., None], call: str) -> None:
    client = boto3.client("dynamodb", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))
    client.meta.events.register("before-send.dynamodb", failure)

    with pytest.raises(ServiceUnavailable) as unavailable:
        OUT_OF_REACH_CALLS[call](DynamoJobStore(STUB_TABLE, client))

    assert isinstance(unavailable.value.__cause__, BotoCoreError)
    assert unavailable.value.code == type(unavailable.value.__cause__).__name__


def test_a_save_of_a_job_this_store_did_not_read_sends_its_request(
    store: DynamoJobStore, requests_to: Requests
) -> None:
    """Not knowing what is stored, it writes the request too: correct, only bigger."""
    created = DynamoJobStore(store._table, store._client).create(job("elsewhere"))
    requests_to.sent.clear()

    store.save(lifecycle.explain(created, T0, "waits"), expected_version=created.version)

    assert '"request"' in json.dumps(requests_to.of("UpdateItem"))


def test_a_summary_of_the_pending_index_is_never_saved(store: DynamoJobStore) -> None:
    created = store.create(job("summary"))
    (summary,) = store.pending_window(G5, 1)

    with pytest.raises(ValueError, match="summary"):
        store.save(lifecycle.explain(summary, T0, "waits"), expected_version=created.version)
