"""DynamoDB throttled, failing or out of reach as ServiceUnavailable, on every call of the
store; other errors as they are."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber
from smq_lambda.adapters import dynamodb_errors
from smq_lambda.adapters.dynamodb_errors import UNAVAILABLE_CODES
from smq_lambda.adapters.dynamodb_save_requests import SAVE_ROUNDS
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.dynamodb_table import TRANSACTION_BUSY_CODES, UNAVAILABLE_REASONS
from smq_lambda.adapters.item_codec import to_item
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import ServiceUnavailable

from tests.adapters.builders import G5, T0, job
from tests.adapters.dynamodb_store.support import STUB_TABLE, TTL_DAYS, projected, registry_and_pool, started
from tests.support.aws import REGION


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


def _fail_pending_front(stub: Stubber, code: str) -> Act:
    first_page = {"Items": [projected(replace(job("a"), version=1))], "Count": 1, "ScannedCount": 1}
    stub.add_response("query", {**first_page, "LastEvaluatedKey": {"name": {"S": "a"}}}, None)
    _errors(stub, "query", code)
    return lambda store: store.pending_front(G5, 5)


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
    registry_and_pool(stub, "a")
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
    "pending_front, second page": _fail_pending_front,
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
    "pending_front": lambda store: store.pending_front(G5, 5),
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
