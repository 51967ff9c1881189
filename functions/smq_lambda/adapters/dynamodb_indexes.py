"""The job store's reads through the queue table's indexes, all eventually consistent:

    by-state         partition state         sort order_key   all jobs of one state, in order
    by-owner         partition owner_state   sort order_key   one owner's jobs of one state, in order
                                                              (`<owner>#<state>`)
    pending-by-pool  partition pending_pool  sort order_key   pending jobs of one pool, in order
                                                              (sparse: only pending items; a job
                                                              that may use other pools has a
                                                              listing item in each: pending_listing)
    pending-by-team  partition pending_team  sort order_key   pending jobs of one team in one pool
                                                              (`<pool>#<team>`; sparse likewise)

**Pending jobs are read a queue front at a time**: the first few of a pool from the sparse pending
index, which projects what a decision needs and not the request. Positions are Select=COUNT
Queries of the same index, made when someone asks. **Listings read about what their page holds**:
one Query per state (of the owner's partitions when an owner is given), each asking for one job more
than the page; a pool filter (`in_pool`) reads past the jobs it drops. Nothing scans the table.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from smq_lambda.adapters.dynamodb_errors import unavailable_as_typed
from smq_lambda.adapters.dynamodb_table import names, query_pages, transaction_busy
from smq_lambda.adapters.item_codec import (
    Item,
    from_item,
    job_order_key,
    owner_state_key,
    pending_team_key,
)
from smq_lambda.adapters.page_token import decode_page_token, encode_page_token
from smq_lambda.adapters.pending_listing import pending_job
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.ports import JobPage

STATE_INDEX = "by-state"
PENDING_INDEX = "pending-by-pool"
TEAM_INDEX = "pending-by-team"
OWNER_INDEX = "by-owner"


def order_key_of(item: Item) -> str:
    return str(item["order_key"]["S"])


class JobIndexes:
    """`page_size` caps the items one Query page reads (see DynamoJobStore)."""

    def __init__(self, table_name: str, client: Any, *, page_size: int | None) -> None:
        self._table = table_name
        self._client = client
        self._page_size = page_size

    def pending_front(self, pool: str, limit: int, *, team: str | None = None) -> list[Job]:
        """At most `limit` items of one pool's (or one team's in the pool) pending partition, read in
        pages of at most `limit`."""
        if limit < 1:
            return []
        page_size = min(limit, self._page_size or limit)
        index, placeholder, key = _pending_partition(pool, team)
        items = self._query(index, placeholder, key, page_size=page_size)
        return [pending_job(item) for item in itertools.islice(items, limit)]

    def count_pending(
        self, pool: str, *, after: str | None = None, before: str | None = None, team: str | None = None
    ) -> int:
        """Select=COUNT, page by page (a COUNT still reads the index items it counts, 1 MB a page)."""
        if after is not None and before is not None and after >= before:
            return 0
        index, placeholder, key = _pending_partition(pool, team)
        key_condition = f"{placeholder} = :key"
        values: dict[str, Any] = {":key": {"S": key}}
        if after is not None and before is not None:
            key_condition += " AND #order_key BETWEEN :after AND :before"
            values[":after"] = {"S": after}
            values[":before"] = {"S": before}
        elif after is not None:
            key_condition += " AND #order_key > :after"
            values[":after"] = {"S": after}
        elif before is not None:
            key_condition += " AND #order_key < :before"
            values[":before"] = {"S": before}
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": index,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeNames": names(key_condition),
            "ExpressionAttributeValues": values,
            "Select": "COUNT",
        }
        total = sum(int(page.get("Count", 0)) for page in query_pages(self._client, request))
        if after is not None and before is not None:
            total -= sum(1 for order_key in (after, before) if self._pending_key_exists(pool, team, order_key))
        return max(total, 0)

    def _pending_key_exists(self, pool: str, team: str | None, order_key: str) -> bool:
        """BETWEEN includes its bounds: whether a pending job of `pool` (and `team`) has `order_key`."""
        index, placeholder, key = _pending_partition(pool, team)
        condition = f"{placeholder} = :key AND #order_key = :order_key"
        with unavailable_as_typed(transaction_busy):
            response = self._client.query(
                TableName=self._table,
                IndexName=index,
                KeyConditionExpression=condition,
                ExpressionAttributeNames=names(condition),
                ExpressionAttributeValues={":key": {"S": key}, ":order_key": {"S": order_key}},
                Select="COUNT",
            )
        return int(response.get("Count", 0)) > 0

    def list_jobs(
        self,
        *,
        states: Collection[JobState],
        pool: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
    ) -> JobPage:
        """One page of jobs in scheduling order, from one index Query per state, merged: the state's
        partition of `by-state`, or with `owner` the owner's partition of it in `by-owner`, so a
        caller's page never reads other owners' jobs. Without a pool filter each Query reads in pages
        of `limit + 1` (one more job tells whether another page follows), not DynamoDB's 1 MB.

        The page token is a cursor: the order key of the page's last job (see page_token.py). Each
        state's Query continues with `order_key > cursor`, so a token stays valid for any number of
        states, needs no per-state DynamoDB keys, and never returns a job twice while the jobs keep
        their priority. A job whose priority changes between two page requests moves in the order
        and may be seen twice or not at all, as in any listing of a changing queue.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        after = decode_page_token(next_token) if next_token else None
        page_size = self._page_size if pool is not None else min(limit + 1, self._page_size or limit + 1)
        streams: list[Iterable[Job]] = []
        for state in sorted({JobState(state) for state in states}):
            index, placeholder, key = _listing_partition(state, owner)
            jobs = map(from_item, self._query(index, placeholder, key, after=after, page_size=page_size))
            listed = jobs if pool is None else (job for job in jobs if in_pool(job, pool))
            streams.append(itertools.islice(listed, limit + 1))
        merged = list(itertools.islice(heapq.merge(*streams, key=job_order_key), limit + 1))
        page = merged[:limit]
        token = encode_page_token(job_order_key(page[-1])) if len(merged) > limit else None
        return JobPage(jobs=page, next_token=token)

    def _query(
        self,
        index: str,
        key_placeholder: str,
        key_value: str,
        *,
        after: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[Item]:
        """Items of one index partition in order_key order, read page by page as they are consumed."""
        key_condition = f"{key_placeholder} = :key"
        values: dict[str, dict[str, str]] = {":key": {"S": key_value}}
        if after is not None:
            key_condition += " AND #order_key > :after"
            values[":after"] = {"S": after}
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": index,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeNames": names(key_condition),
            "ExpressionAttributeValues": values,
        }
        page_size = page_size or self._page_size
        if page_size is not None:
            request["PaginationConfig"] = {"PageSize": page_size}
        for page in query_pages(self._client, request):
            yield from page.get("Items", [])


def in_pool(job: Job, pool: str) -> bool:
    """The listing's pool filter: a pending job is in every pool it waits in (each instance group's,
    each preference's), any other in the pools it holds, or held last (a flexible job's placement)."""
    return pool in (job.where.pools if job.state is JobState.PENDING else job.demand)


def _listing_partition(state: JobState, owner: str | None) -> tuple[str, str, str]:
    """The index, key placeholder and key of the jobs in `state` (of `owner`, when given)."""
    if owner is None:
        return STATE_INDEX, "#state", str(state)
    return OWNER_INDEX, "#owner_state", owner_state_key(owner, state)


def _pending_partition(pool: str, team: str | None) -> tuple[str, str, str]:
    """The index, key placeholder and key of the pending jobs of `pool` (of `team`, "" for no team)."""
    if team is None:
        return PENDING_INDEX, "#pending_pool", pool
    return TEAM_INDEX, "#pending_team", pending_team_key(pool, team)
