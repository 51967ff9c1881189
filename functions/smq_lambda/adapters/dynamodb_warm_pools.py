"""The WarmPoolStore port as items of the queue table.

* One item per warm pool, `#warm#<training job name>`: its pool, instance type, count, matching key,
  `until` (ISO time) and `status`: `available`, `released` (the queue ended it), or the status that
  ended it (`Reused`, `Terminated`), which stays until its TTL (`expires_at`, ENDED_TTL after
  `until`) so that a late or repeated `Available` report never brings it back.
* The registry `#warm-pools`: the string set `live` names the warm pools not yet ended, so a pass
  reads them by key without a scan; and the totals of the ended ones (`retained`, `reused`,
  `retained_instance_s`), added in the same transaction that ends one, so each counts once.

        record (Available)            end (Reused | Terminated)
    absent ──────────────▶ available ───────────────────────────▶ ended  (tombstone until TTL)
       │                       │ release (queue)                   ▲
       │                       ▼                                   │
       │                    released ──────────────────────────────┘
       └──────────── end first (reports reordered) ───────────────▶ ended

Job names never start with '#', so neither key is a job's; neither carries an indexed attribute.

A pass reads every warm pool `live` names, 100 keys per BatchGetItem: a warm pool left unread would
hold instances the pass hands out again, so the read is exact rather than capped. What it costs
follows the warm pools held, which their pools' capacity bounds (each holds at least one instance),
not the queue's depth; ended and run-out ones leave `live` at the next read. The one bound is the
registry item's 400 KB: about 6,000 names of 63 characters, far past any capacity.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.attribute_values import format_time, parse_time
from smq_lambda.adapters.dynamodb_errors import error_code, unavailable_as_typed, written
from smq_lambda.adapters.dynamodb_table import (
    batch_get,
    cancellation_codes,
    get_item,
    transaction_busy,
)
from smq_lambda.domain.sagemaker.warm_pool_status import REUSED, TERMINATED
from smq_lambda.domain.warm.warm_pools import WarmPool, WarmPoolTotals

REGISTRY_KEY = "#warm-pools"
WARM_POOL_PREFIX = "#warm#"
AVAILABLE_STATUS, RELEASED_STATUS = "available", "released"
ENDED_TTL = timedelta(days=7)
TRANSACTION_CANCELED = "TransactionCanceledException"


def warm_pool_key(training_job_name: str) -> str:
    return f"{WARM_POOL_PREFIX}{training_job_name}"


class DynamoWarmPools:
    def __init__(self, table_name: str, client: Any, *, clock: Callable[[], datetime] | None = None) -> None:
        self._table = table_name
        self._client = client
        self._clock = clock or (lambda: datetime.now(UTC))

    def record(self, warm: WarmPool) -> bool:
        item = {
            "name": {"S": warm_pool_key(warm.training_job_name)},
            "status": {"S": AVAILABLE_STATUS},
            "pool": {"S": warm.pool},
            "instance_type": {"S": warm.instance_type},
            "count": {"N": str(warm.count)},
            "warm_key": {"S": warm.key},
            "until": {"S": format_time(warm.available_until)},
            "expires_at": {"N": str(int((warm.available_until + ENDED_TTL).timestamp()))},
        }
        return self._transact(
            {
                "Put": {
                    "TableName": self._table,
                    "Item": item,
                    "ConditionExpression": "attribute_not_exists(#name)",
                    "ExpressionAttributeNames": {"#name": "name"},
                }
            },
            self._registry("ADD #live :names", {":names": {"SS": [warm.training_job_name]}}),
        )

    def end(self, training_job_name: str, *, reused: bool, retained_instance_s: int) -> bool:
        expires = self._clock() + ENDED_TTL
        return self._transact(
            {
                "Update": {
                    "TableName": self._table,
                    "Key": {"name": {"S": warm_pool_key(training_job_name)}},
                    "UpdateExpression": "SET #status = :ended, expires_at = :expires",
                    "ConditionExpression": "attribute_not_exists(#name) OR #status IN (:available, :released)",
                    "ExpressionAttributeNames": {"#name": "name", "#status": "status"},
                    "ExpressionAttributeValues": {
                        ":ended": {"S": REUSED if reused else TERMINATED},
                        ":expires": {"N": str(int(expires.timestamp()))},
                        ":available": {"S": AVAILABLE_STATUS},
                        ":released": {"S": RELEASED_STATUS},
                    },
                }
            },
            self._registry(
                "DELETE #live :names ADD retained :one, reused :reused, retained_instance_s :seconds",
                {
                    ":names": {"SS": [training_job_name]},
                    ":one": {"N": "1"},
                    ":reused": {"N": "1" if reused else "0"},
                    ":seconds": {"N": str(retained_instance_s)},
                },
            ),
        )

    def release(self, training_job_name: str) -> bool:
        return written(
            self._client.update_item,
            also=transaction_busy,
            TableName=self._table,
            Key={"name": {"S": warm_pool_key(training_job_name)}},
            UpdateExpression="SET #status = :released",
            ConditionExpression="#status = :available",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":released": {"S": RELEASED_STATUS}, ":available": {"S": AVAILABLE_STATUS}},
        )

    def available(self, now: datetime) -> list[WarmPool]:
        """The registry, then every warm pool it names, by key (strongly consistent). Those that ran
        out (`until` passed: SageMaker has ended them, whatever report was lost) are left out, and
        dropped from the registry with any it names that ended, so it never fills with them (their
        end report, should it come, still counts them once)."""
        registry = get_item(self._client, self._table, REGISTRY_KEY) or {}
        names = sorted(registry.get("live", {}).get("SS", []))
        items = batch_get(self._client, self._table, [warm_pool_key(name) for name in names])
        held = [
            _warm_pool(item) for item in items if item.get("status", {}).get("S") in (AVAILABLE_STATUS, RELEASED_STATUS)
        ]
        current = sorted((warm for warm in held if warm.available_until > now), key=lambda warm: warm.training_job_name)
        stale = set(names) - {warm.training_job_name for warm in current}
        if stale:
            with unavailable_as_typed(transaction_busy):
                self._client.update_item(
                    **self._registry("DELETE #live :names", {":names": {"SS": sorted(stale)}})["Update"]
                )
        return current

    def totals(self) -> WarmPoolTotals:
        registry = get_item(self._client, self._table, REGISTRY_KEY) or {}

        def number(attribute: str) -> int:
            return int(registry.get(attribute, {}).get("N", "0"))

        return WarmPoolTotals(number("retained"), number("reused"), number("retained_instance_s"))

    def _registry(self, update: str, values: dict[str, Any]) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"name": {"S": REGISTRY_KEY}},
                "UpdateExpression": update,
                "ExpressionAttributeNames": {"#live": "live"},
                "ExpressionAttributeValues": values,
            }
        }

    def _transact(self, *actions: dict[str, Any]) -> bool:
        """Write `actions` at once; False when the first one's condition failed."""
        with unavailable_as_typed(transaction_busy):
            try:
                self._client.transact_write_items(TransactItems=list(actions))
            except ClientError as exc:
                if error_code(exc) == TRANSACTION_CANCELED and cancellation_codes(exc)[:1] == [
                    "ConditionalCheckFailed"
                ]:
                    return False
                raise
        return True


def _warm_pool(item: dict[str, Any]) -> WarmPool:
    return WarmPool(
        training_job_name=item["name"]["S"].removeprefix(WARM_POOL_PREFIX),
        pool=item["pool"]["S"],
        instance_type=item["instance_type"]["S"],
        count=int(item["count"]["N"]),
        key=item["warm_key"]["S"],
        available_until=parse_time(item["until"]["S"]),
        released=item["status"]["S"] == RELEASED_STATUS,
    )
