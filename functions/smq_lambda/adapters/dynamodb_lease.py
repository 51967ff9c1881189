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


def _condition_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class DynamoPassLease:
    def __init__(self, table_name: str, client: Any, duration: timedelta = DEFAULT_DURATION) -> None:
        self._table = table_name
        self._client = client
        self._duration = duration

    def try_acquire(self, owner: str, now: datetime) -> bool:
        try:
            self._client.update_item(
                TableName=self._table,
                Key=LEASE_KEY,
                UpdateExpression="SET lease_owner = :owner, lease_until = :until REMOVE rerun",
                ConditionExpression="attribute_not_exists(lease_owner) OR lease_until < :now",
                ExpressionAttributeValues={
                    ":owner": {"S": owner},
                    ":until": {"N": str(int((now + self._duration).timestamp()))},
                    ":now": {"N": str(int(now.timestamp()))},
                },
            )
        except ClientError as exc:
            if _condition_failed(exc):
                return False
            raise
        return True

    def request_rerun(self) -> None:
        self._client.update_item(
            TableName=self._table,
            Key=LEASE_KEY,
            UpdateExpression="SET rerun = :yes",
            ExpressionAttributeValues={":yes": {"BOOL": True}},
        )

    def release(self, owner: str) -> bool:
        try:
            self._client.update_item(
                TableName=self._table,
                Key=LEASE_KEY,
                UpdateExpression="REMOVE lease_owner, lease_until",
                ConditionExpression="lease_owner = :owner AND attribute_not_exists(rerun)",
                ExpressionAttributeValues={":owner": {"S": owner}},
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            return not self._take_rerun(owner)
        return True

    def abandon(self, owner: str) -> None:
        try:
            self._client.update_item(
                TableName=self._table,
                Key=LEASE_KEY,
                UpdateExpression="REMOVE lease_owner, lease_until",
                ConditionExpression="lease_owner = :owner",
                ExpressionAttributeValues={":owner": {"S": owner}},
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise

    def _take_rerun(self, owner: str) -> bool:
        """Clear a requested rerun while still holding the lease; False if the lease was lost
        (it expired and another pass holds it now, which covers the rerun)."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key=LEASE_KEY,
                UpdateExpression="REMOVE rerun",
                ConditionExpression="lease_owner = :owner",
                ExpressionAttributeValues={":owner": {"S": owner}},
            )
        except ClientError as exc:
            if _condition_failed(exc):
                return False
            raise
        return True
