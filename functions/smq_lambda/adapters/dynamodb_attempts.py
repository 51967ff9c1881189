"""The jobs whose attempts may overlap a time range, for GET /attempts (the ui's timeline).

An attempt overlaps [start, end] when it began by `end` and is still live or ended at or after
`start`. Its job is then live now (read from `by-state`, one Query per live state: at most what the
pools hold) or has its latest attempt end at or after `start` (read from the sparse `by-attempt-end`
index, keyed by that end's UTC day: one Query per day from `start`'s to today's, each reading only
the jobs that ended an attempt since `start`). For a range that ends now, which is what a timeline
asks, that is exactly the jobs of the answer; nothing scans the table.

The partitions are read one after another in HistoryPosition order, each Query in pages of the
caller's size and only as far as the caller consumes, so a page of GET /attempts reads about what it
returns. A read continues after a position with the Query's own ExclusiveStartKey in that position's
partition, and from the start of every later one.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from smq_lambda.adapters.dynamodb_table import query_pages
from smq_lambda.adapters.item_codec import Item, attempt_end_day, format_time, from_item
from smq_lambda.domain.jobs.states import LIVE_STATES
from smq_lambda.ports import HistoryEntry, HistoryPosition

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


def history_partitions(start: datetime, now: datetime) -> list[tuple[bool, str]]:
    """(ended, partition) of every partition a read from `start` visits, in the order it visits them."""
    return [(False, str(state)) for state in sorted(LIVE_STATES)] + [(True, day) for day in days_between(start, now)]


def history_position(item: Item, *, ended: bool) -> HistoryPosition:
    """Where an item read from a live state's (ended False) or a day's partition stands."""
    if ended:
        return HistoryPosition(True, item["attempt_end_day"]["S"], item["attempt_end"]["S"], item["name"]["S"])
    return HistoryPosition(False, item["state"]["S"], item["order_key"]["S"], item["name"]["S"])


class DynamoAttemptHistory:
    """Reads the queue table's `by-state` and `by-attempt-end` indexes (eventually consistent)."""

    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def jobs_with_attempts_since(
        self, start: datetime, now: datetime, *, after: HistoryPosition | None = None, page_size: int | None = None
    ) -> Iterator[HistoryEntry]:
        """Live jobs, then jobs whose latest attempt ended in [start, now]; a job found both ways
        (it ended an attempt and started another) is listed once, as a live job."""
        since = format_time(start)
        for ended, partition in history_partitions(start, now):
            if after is not None and (ended, partition) < (after.ended, after.partition):
                continue
            resume = after if after is not None and (ended, partition) == (after.ended, after.partition) else None
            if ended:
                items = self._ended_on(partition, since, resume, page_size)
            else:
                items = self._live_in(partition, resume, page_size)
            for item in items:
                if not ended or item["state"]["S"] not in LIVE_STATES:
                    yield HistoryEntry(from_item(item), history_position(item, ended=ended))

    def _live_in(self, state: str, resume: HistoryPosition | None, page_size: int | None) -> Iterator[Item]:
        request = self._request(STATE_INDEX, "#state = :key", {":key": {"S": state}}, page_size)
        if resume is not None:
            request["ExclusiveStartKey"] = {
                "state": {"S": state},
                "order_key": {"S": resume.sort_key},
                "name": {"S": resume.item_key},
            }
        return self._query(request)

    def _ended_on(self, day: str, since: str, resume: HistoryPosition | None, page_size: int | None) -> Iterator[Item]:
        condition = "#attempt_end_day = :key AND #attempt_end >= :since"
        request = self._request(ATTEMPT_END_INDEX, condition, {":key": {"S": day}, ":since": {"S": since}}, page_size)
        # A start key outside the key condition is a ValidationException; every item the condition
        # keeps comes after such a position anyway.
        if resume is not None and resume.sort_key >= since:
            request["ExclusiveStartKey"] = {
                "attempt_end_day": {"S": day},
                "attempt_end": {"S": resume.sort_key},
                "name": {"S": resume.item_key},
            }
        return self._query(request)

    def _request(self, index: str, condition: str, values: dict[str, Any], page_size: int | None) -> dict[str, Any]:
        request: dict[str, Any] = {
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
        if page_size is not None:
            request["PaginationConfig"] = {"PageSize": page_size}
        return request

    def _query(self, request: dict[str, Any]) -> Iterator[Item]:
        for page in query_pages(self._client, request):
            yield from page.get("Items", [])
