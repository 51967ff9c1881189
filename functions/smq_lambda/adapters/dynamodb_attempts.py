"""The jobs whose attempts may overlap a time range, for GET /attempts (the ui's timeline).

An attempt overlaps [start, end] when it began by `end` and is still live or ended at or after
`start`. Its job is then live now (read from `by-state`, one Query per live state: at most what the
pools hold) or has its latest attempt end at or after `start` (read from the sparse `by-attempt-end`
index, keyed by that end's UTC day: one Query per day from `start`'s to today's, each reading only
the jobs that ended an attempt since `start`). For a range that ends now, which is what a timeline
asks, that is exactly the jobs of the answer; nothing scans the table.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from smq_lambda.adapters.dynamodb_table import query_pages
from smq_lambda.adapters.item_codec import Item, attempt_end_day, format_time, from_item
from smq_lambda.domain.model import Job
from smq_lambda.domain.states import LIVE_STATES

ATTEMPT_END_INDEX = "by-attempt-end"
STATE_INDEX = "by-state"


def days_between(start: datetime, end: datetime) -> list[str]:
    """The `by-attempt-end` partitions from `start`'s UTC day to `end`'s, both included."""
    first, last = attempt_end_day(start), attempt_end_day(end)
    days: list[str] = []
    day = datetime.fromisoformat(first)
    while (text := day.date().isoformat()) <= last:
        days.append(text)
        day += timedelta(days=1)
    return days


class DynamoAttemptHistory:
    """Reads the queue table's `by-state` and `by-attempt-end` indexes (eventually consistent)."""

    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def jobs_with_attempts_since(self, start: datetime, now: datetime) -> list[Job]:
        """Live jobs, then jobs whose latest attempt ended in [start, now]; a job found both ways
        (it ended an attempt and started another) is listed once."""
        items: dict[tuple[str, str], Item] = {}
        for state in sorted(LIVE_STATES):
            for item in self._query(STATE_INDEX, "#state = :key", {":key": {"S": str(state)}}):
                items.setdefault((item["name"]["S"], item["job_id"]["S"]), item)
        since = {":since": {"S": format_time(start)}}
        for day in days_between(start, now):
            condition = "#attempt_end_day = :key AND #attempt_end >= :since"
            for item in self._query(ATTEMPT_END_INDEX, condition, {":key": {"S": day}, **since}):
                items.setdefault((item["name"]["S"], item["job_id"]["S"]), item)
        return [from_item(item) for item in items.values()]

    def _query(self, index: str, condition: str, values: dict[str, Any]) -> Iterator[Item]:
        request = {
            "TableName": self._table,
            "IndexName": index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": {
                placeholder: placeholder[1:]
                for placeholder in ("#state", "#attempt_end_day", "#attempt_end")
                if placeholder in condition
            },
            "ExpressionAttributeValues": values,
        }
        for page in query_pages(self._client, request):
            yield from page.get("Items", [])
