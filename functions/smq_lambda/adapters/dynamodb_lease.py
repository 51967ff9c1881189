"""The scheduling-pass lease as one item of the queue table.

Passes serialize here rather than on per-pool counters because only passes start jobs: with one
pass at a time, capacity is checked against a snapshot no one else can change in the meantime
(event handlers and API calls only release capacity or leave it alone). In AWS two batches of the
scheduler queue and the reconciliation schedule may run at once, and the lease is what keeps their
passes apart; it also holds for the local stack, tests that run passes on threads, and any retry
that overlaps a slow pass.

    holder A: acquire ─── pass ───────────── release? (rerun set → clear, pass again) ── release
    caller B:            acquire ✗ → set rerun → acquire ✗ → return (A will run for B)

How long a lease lasts. A pass that Lambda kills at its timeout never releases the lease, and no
pass can run until it expires; a lease shorter than the invocation could expire under a live pass.
So a Lambda invocation holds the lease exactly as long as it can live: its remaining time
(`LambdaContext.get_remaining_time_in_millis()`) plus `EXPIRY_MARGIN`, which absorbs clock skew
and the whole seconds the item stores. Callers without a Lambda context get `DEFAULT_DURATION`,
the scheduler function's `Timeout` in template.yaml plus the margin (a test keeps the two equal).

    invocation: start ──── pass ──── killed at its timeout
    lease:            acquire ─────────────────────────────┤ until = deadline + margin
    next pass:                                             └─ may acquire
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from smq_lambda.adapters.dynamodb_errors import written

LEASE_KEY = {"name": {"S": "#scheduler-lease"}}
"""Job names cannot contain '#', so the lease can never collide with a job."""
SCHEDULER_TIMEOUT = timedelta(seconds=180)
"""The scheduler function's `Timeout` in template.yaml."""
EXPIRY_MARGIN = timedelta(seconds=5)
"""How long after its holder's deadline a lease still stands: clock skew and rounding to seconds."""
DEFAULT_DURATION = SCHEDULER_TIMEOUT + EXPIRY_MARGIN
"""For callers without a Lambda context: as long as any scheduler invocation can live."""


def lease_duration(remaining_millis: int) -> timedelta:
    """How long an invocation with `remaining_millis` to live holds the lease."""
    return timedelta(milliseconds=max(remaining_millis, 0)) + EXPIRY_MARGIN


class DynamoPassLease:
    def __init__(self, table_name: str, client: Any, duration: timedelta = DEFAULT_DURATION) -> None:
        self._table = table_name
        self._client = client
        self._duration = duration

    def try_acquire(self, owner: str, now: datetime, duration: timedelta | None = None) -> bool:
        until = now + (self._duration if duration is None else duration)
        return self._update(
            "SET lease_owner = :owner, lease_until = :until REMOVE rerun",
            condition="attribute_not_exists(lease_owner) OR lease_until < :now",
            values={
                ":owner": {"S": owner},
                ":until": {"N": str(int(until.timestamp()))},
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
        return written(self._client.update_item, **request)
