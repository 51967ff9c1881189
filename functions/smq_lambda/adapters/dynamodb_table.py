"""The queue table's requests shared by the job store's parts (dynamodb_store, dynamodb_pool_holders,
dynamodb_indexes): expression names, transaction failures read as typed errors, and the reads that
come in pages or batches.

DynamoDB throttled, failing or out of reach becomes ServiceUnavailable: the codes of
adapters/dynamodb_errors, plus the transaction codes below, and any BotoCoreError (timeouts,
connection errors). Nothing the caller asked for is known to have changed, and every write is
conditional, so repeating the request later is safe: a write that timed out but landed then
conflicts. Any other error is a defect and propagates as it is.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.attribute_values import Item
from smq_lambda.adapters.dynamodb_errors import SERVICE, error_code, unavailable_as_typed
from smq_lambda.errors import ServiceUnavailable

TRANSACTION_CANCELED = "TransactionCanceledException"
CONDITION_FAILED_REASON = "ConditionalCheckFailed"
BATCH_GET_MAX = 100
BATCH_GET_ROUNDS = 8
"""BatchGetItem may leave keys unprocessed under load; retry them this many times with backoff."""

TRANSACTION_BUSY_CODES = frozenset({"TransactionConflictException"})
"""Besides throttling: a write that met an item another transaction (a `create` replacing a finished
job) is writing. It changed nothing; the transaction ends within moments."""
UNAVAILABLE_REASONS = frozenset(
    {"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded", "TransactionConflict"}
)
"""Cancellation reasons of a TransactWriteItems that mean the same "not now"."""

_NAMES = {
    "#name": "name",
    "#state": "state",
    "#pool": "pool",
    "#version": "version",
    "#job_id": "job_id",
    "#order_key": "order_key",
    "#owner_state": "owner_state",
    "#pending_pool": "pending_pool",
    "#pending_team": "pending_team",
}
"""Placeholders for every attribute an expression names: several are DynamoDB reserved words."""
_PLACEHOLDER = re.compile(r"#\w+")


def names(expression: str) -> dict[str, str]:
    return {placeholder: _NAMES[placeholder] for placeholder in set(_PLACEHOLDER.findall(expression))}


def cancellation_codes(exc: ClientError) -> list[str]:
    """Per-action reason codes of a cancelled transaction, in the order of its actions."""
    return [str(reason.get("Code", "None")) for reason in exc.response.get("CancellationReasons", [])]


def transaction_busy(exc: ClientError) -> ServiceUnavailable | None:
    code = error_code(exc)
    busy = code in TRANSACTION_BUSY_CODES or (
        code == TRANSACTION_CANCELED and not UNAVAILABLE_REASONS.isdisjoint(cancellation_codes(exc))
    )
    if not busy:
        return None
    return ServiceUnavailable(SERVICE, code, str(exc.response.get("Error", {}).get("Message") or ""))


def get_item(client: Any, table: str, key: str) -> Item | None:
    with unavailable_as_typed(transaction_busy):
        response = client.get_item(TableName=table, Key={"name": {"S": key}}, ConsistentRead=True)
    item: Item | None = response.get("Item")
    return item


def query_pages(client: Any, request: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The pages of one Query, each read when the previous one has been consumed."""
    pages = iter(client.get_paginator("query").paginate(**request))
    while True:
        with unavailable_as_typed(transaction_busy):
            page = next(pages, None)
        if page is None:
            return
        yield page


def batch_get(client: Any, table: str, keys: list[str]) -> list[Item]:
    """Strongly consistent reads of the named items, 100 keys per call, retrying unprocessed keys."""
    items: list[Item] = []
    for start in range(0, len(keys), BATCH_GET_MAX):
        batch: list[Item] = [{"name": {"S": key}} for key in keys[start : start + BATCH_GET_MAX]]
        for round_number in range(BATCH_GET_ROUNDS):
            with unavailable_as_typed(transaction_busy):
                response = client.batch_get_item(RequestItems={table: {"Keys": batch, "ConsistentRead": True}})
            items.extend(response.get("Responses", {}).get(table, []))
            batch = response.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
            if not batch:
                break
            time.sleep(min(0.05 * 2**round_number, 1.0))
        else:
            raise ServiceUnavailable(
                SERVICE,
                "UnprocessedKeys",
                f"batch get left {len(batch)} keys unread after {BATCH_GET_ROUNDS} rounds",
            )
    return items
