"""The scheduling-pass lease as one item of the queue table.

Passes serialize here rather than on per-pool counters because only passes start jobs: with one
pass at a time, capacity is checked against a snapshot no one else can change in the meantime
(event handlers and API calls only release capacity or leave it alone). In AWS the scheduler's
reserved concurrency of 1 already keeps passes apart; the lease also holds for the local stack,
tests that run passes on threads, and any retry that overlaps a slow pass.

    holder A: acquire ─── pass ───────────── release? (rerun set → clear, pass again) ── release
    caller B:            acquire ✗ → set rerun → acquire ✗ → return (A will run for B)
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

LEASE_KEY = {"name": {"S": "#scheduler-lease"}}
"""Job names cannot contain '#', so the lease can never collide with a job."""
DEFAULT_DURATION = timedelta(minutes=5)
"""Longer than the scheduler function's timeout, so a live holder never loses the lease."""


class DynamoPassLease:
    def __init__(self, table_name: str, client: Any, duration: timedelta = DEFAULT_DURATION) -> None:
        self._table = table_name
        self._client = client
        self._duration = duration

    def try_acquire(self, owner: str, now: datetime) -> bool:
        return self._update(
            "SET lease_owner = :owner, lease_until = :until REMOVE rerun",
            condition="attribute_not_exists(lease_owner) OR lease_until < :now",
            values={
                ":owner": {"S": owner},
                ":until": {"N": str(int((now + self._duration).timestamp()))},
                ":now": {"N": str(int(now.timestamp()))},
            },
        )

    def request_rerun(self) -> None:
        self._update("SET rerun = :yes", values={":yes": {"BOOL": True}})

    def release(self, owner: str) -> bool:
        if self._update(
            "REMOVE lease_owner, lease_until",
            condition="lease_owner = :owner AND attribute_not_exists(rerun)",
            values={":owner": {"S": owner}},
        ):
            return True
        # Either a rerun was requested (clear it and keep the lease: the caller runs again), or the
        # lease expired and another pass holds it now, which covers the rerun.
        took_rerun = self._update("REMOVE rerun", condition="lease_owner = :owner", values={":owner": {"S": owner}})
        return not took_rerun

    def abandon(self, owner: str) -> None:
        self._update(
            "REMOVE lease_owner, lease_until", condition="lease_owner = :owner", values={":owner": {"S": owner}}
        )

    def _update(self, expression: str, *, condition: str | None = None, values: dict[str, Any]) -> bool:
        """One UpdateItem of the lease item; False when its condition did not hold."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": LEASE_KEY,
            "UpdateExpression": expression,
            "ExpressionAttributeValues": values,
        }
        if condition is not None:
            request["ConditionExpression"] = condition
        try:
            self._client.update_item(**request)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True
