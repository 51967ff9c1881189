"""The BudgetWarningMarks port as items of the queue table: `#budget-warned#<team>#<YYYY-MM>#<share>`
(e.g. `#budget-warned#vision#2026-11#0.8`), each put only if absent, so of any number of racing
claims exactly one succeeds. Job names never start with '#' and team names never contain one (a
team is a tag value), so the key is unambiguous and collides with nothing. A mark expires
MARK_TTL_DAYS after it was set (the table's TTL), long after its month is over.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from smq_lambda.adapters.dynamodb_errors import written

MARK_PREFIX = "#budget-warned#"
MARK_TTL_DAYS = 62


def mark_key(team: str, month: str, threshold: float) -> str:
    return f"{MARK_PREFIX}{team}#{month}#{threshold:g}"


class DynamoBudgetWarningMarks:
    def __init__(self, table_name: str, client: Any, *, clock: Callable[[], datetime] | None = None) -> None:
        self._table = table_name
        self._client = client
        self._clock = clock or _utcnow

    def claim(self, team: str, month: str, threshold: float) -> bool:
        expires = self._clock() + timedelta(days=MARK_TTL_DAYS)
        return written(
            self._client.put_item,
            TableName=self._table,
            Item={
                "name": {"S": mark_key(team, month, threshold)},
                "expires_at": {"N": str(int(expires.timestamp()))},
            },
            ConditionExpression="attribute_not_exists(#name)",
            ExpressionAttributeNames={"#name": "name"},
        )


def _utcnow() -> datetime:
    return datetime.now(UTC)
