"""What the DynamoDB store tests share: the stubbed table's name, a recorder of the requests a client
makes, raw reads of the table, and the steps and stubbed answers several files use."""

from __future__ import annotations

import copy
from typing import Any

from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_pool_holders import pool_key
from smq_lambda.adapters.item_codec import to_item
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job

from tests.adapters.builders import G5, T0
from tests.support.aws import pending_index_attributes

STUB_TABLE = "stubbed-queue"
TTL_DAYS = 30


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


def registry_update(pools: list[str]) -> dict[str, Any]:
    return {
        "TableName": STUB_TABLE,
        "Key": {"name": {"S": "#pools"}},
        "UpdateExpression": "ADD #pools :pools",
        "ExpressionAttributeNames": {"#pools": "pools"},
        "ExpressionAttributeValues": {":pools": {"SS": pools}},
    }


def projected(each: Job) -> dict[str, Any]:
    """A job's item as the pending index holds it."""
    return {key: value for key, value in to_item(each, ttl_days=TTL_DAYS).items() if key in pending_index_attributes()}


def registry_and_pool(stub: Stubber, *live: str) -> None:
    stub.add_response("get_item", {"Item": {"name": {"S": "#pools"}, "pools": {"SS": [G5]}}}, None)
    stub.add_response(
        "batch_get_item",
        {"Responses": {STUB_TABLE: [{"name": {"S": f"#pool#{G5}"}, "live": {"SS": list(live)}}]}},
        None,
    )
