"""`save`'s exact requests (Stubber): one conditional UpdateItem, or one transaction with every
pool's live set; conflicts and retries."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_errors import UNAVAILABLE_CODES
from smq_lambda.adapters.dynamodb_save_requests import SAVE_ROUNDS
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.dynamodb_table import TRANSACTION_BUSY_CODES
from smq_lambda.adapters.item_codec import IMMUTABLE_ATTRIBUTES, OPTIONAL_ATTRIBUTES, to_item
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import ENTERED_ONLY_WHILE_LIVE, JobState
from smq_lambda.errors import ServiceUnavailable, VersionConflict

from tests.adapters.builders import ALICE, G5, P5, T0, job
from tests.adapters.dynamodb_store.support import STUB_TABLE, TTL_DAYS, Requests, running, started
from tests.support.aws import pending_index_attributes

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
    job_update, *pool_updates = transaction["TransactItems"][:3]
    listings = transaction["TransactItems"][3:]
    assert_updates_to(job_update["Update"], after, before.version)
    assert listings == _hetero_listing_actions(after)
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


def _hetero_listing_actions(after: Job) -> list[dict[str, Any]]:
    """What a save of the heterogeneous job does to its listing item in its second pool: put while
    pending, deleted in a state a pending job may enter, untouched otherwise."""
    key = {"name": {"S": f"#listing#{G5}#hetero"}}
    if after.state is JobState.PENDING:
        item = to_item(after, ttl_days=TTL_DAYS)
        projected = {name: value for name, value in item.items() if name in pending_index_attributes()}
        listed = {**projected, **key, "pending_pool": {"S": G5}, "pending_team": {"S": f"{G5}#"}}
        del listed["state"]
        return [{"Put": {"TableName": STUB_TABLE, "Item": listed}}]
    if after.state in (JobState.STARTING, JobState.FAILED, JobState.CANCELLED):
        return [{"Delete": {"TableName": STUB_TABLE, "Key": key}}]
    return []


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
