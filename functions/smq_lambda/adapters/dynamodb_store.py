"""The JobStore port on the DynamoDB queue table (a low-level boto3 `dynamodb` client).

Every write is a PutItem with a condition; a failed condition becomes a typed error
(JobConflict, VersionConflict) raised from the ClientError. Every read of many jobs is a paginated
Query of one of the two indexes (see item_codec for the item layout); nothing scans the table.

    by-state         partition state         sort order_key   all jobs of one state, in order
    pending-by-pool  partition pending_pool  sort order_key   pending jobs of one pool, in order
                                                              (sparse: only pending items)
"""

from __future__ import annotations

import heapq
import itertools
import re
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.item_codec import (
    Item,
    decode_page_token,
    encode_page_token,
    from_item,
    to_item,
)
from smq_lambda.domain.model import Job
from smq_lambda.domain.states import ACTIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import JobConflict, VersionConflict
from smq_lambda.ports import JobPage

STATE_INDEX = "by-state"
PENDING_INDEX = "pending-by-pool"
CONDITION_FAILED = "ConditionalCheckFailedException"
BATCH_GET_MAX = 100
BATCH_GET_ROUNDS = 8
"""BatchGetItem may leave keys unprocessed under load; retry them this many times with backoff."""

_NAMES = {
    "#name": "name",
    "#state": "state",
    "#pool": "pool",
    "#owner": "owner",
    "#version": "version",
    "#job_id": "job_id",
    "#order_key": "order_key",
    "#pending_pool": "pending_pool",
}
"""Placeholders for every attribute an expression names: several are DynamoDB reserved words."""


_PLACEHOLDER = re.compile(r"#\w+")


def _names(expression: str) -> dict[str, str]:
    return {placeholder: _NAMES[placeholder] for placeholder in set(_PLACEHOLDER.findall(expression))}


def _condition_failed(exc: ClientError) -> bool:
    return bool(exc.response.get("Error", {}).get("Code") == CONDITION_FAILED)


def _order_key_of(item: Item) -> str:
    return str(item["order_key"]["S"])


class DynamoJobStore:
    """Jobs in the queue table.

    `page_size` caps the items one Query page reads (DynamoDB's own 1 MB page limit applies
    regardless); tests set it small so that every read crosses page boundaries.
    """

    def __init__(
        self,
        table_name: str,
        client: Any = None,
        *,
        ttl_days: int = 30,
        page_size: int | None = None,
    ) -> None:
        if client is None:
            import boto3

            client = boto3.client("dynamodb")
        self._table = table_name
        self._client = client
        self._ttl_days = ttl_days
        self._page_size = page_size

    # ------------------------------------------------------------------ writes

    def create(self, job: Job) -> Job:
        """Put version 1 of a job unless an unfinished job holds the name.

        no item ─────────────▶ put
        finished job (state completed/failed/cancelled) ─▶ put (its history is replaced)
        unfinished job ──────▶ JobConflict naming its state (ReturnValuesOnConditionCheckFailure)
        """
        stored = replace(job, version=1)
        terminal = sorted(str(state) for state in TERMINAL_STATES)
        placeholders = [f":terminal{index}" for index in range(len(terminal))]
        condition = f"attribute_not_exists(#name) OR #state IN ({', '.join(placeholders)})"
        try:
            self._client.put_item(
                TableName=self._table,
                Item=to_item(stored, ttl_days=self._ttl_days),
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(condition),
                ExpressionAttributeValues={p: {"S": state} for p, state in zip(placeholders, terminal, strict=True)},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            state = exc.response.get("Item", {}).get("state", {}).get("S", "unfinished")
            raise JobConflict(job.name, f"a job named {job.name!r} is already {state}") from exc
        return stored

    def save(self, job: Job, *, expected_version: int) -> Job:
        """Put `job` if the stored item is still version `expected_version` of the same submission.

        The job id is part of the condition because versions restart at 1 when a finished job's name
        is reused: without it, a writer holding the old job at version 1 could overwrite the new one.
        """
        if job.version != expected_version + 1:
            raise ValueError(f"job {job.name!r} must be saved as version {expected_version + 1}, not {job.version}")
        condition = "#version = :expected AND #job_id = :job_id"
        try:
            self._client.put_item(
                TableName=self._table,
                Item=to_item(job, ttl_days=self._ttl_days),
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(condition),
                ExpressionAttributeValues={":expected": {"N": str(expected_version)}, ":job_id": {"S": job.job_id}},
            )
        except ClientError as exc:
            if _condition_failed(exc):
                raise VersionConflict(job.name) from exc
            raise
        return job

    # ------------------------------------------------------------------ reads

    def get(self, name: str) -> Job | None:
        response = self._client.get_item(TableName=self._table, Key={"name": {"S": name}}, ConsistentRead=True)
        item = response.get("Item")
        return None if item is None else from_item(item)

    def active_jobs(self) -> list[Job]:
        """Every pending and live job in scheduling order, each as the base table holds it now.

        Global secondary indexes are eventually consistent: an index entry can lag a write by a
        moment, showing an old state or version. The scheduler writes every change conditionally
        on the version it read here, so a stale version could only make its writes lose; but a
        stale *state* would count capacity wrongly (a job that just started still looking
        pending). So the indexes only say which names are active, and the items themselves are then
        read with a strongly consistent BatchGetItem; jobs that have finished meanwhile drop out.

        A job moving between two active states is listed under its old state or its new one (names
        are de-duplicated), and the re-read gives its current state either way. A job just
        submitted may be missing for a moment: it waits for the next pass, which its submission
        triggers anyway. DynamoDB does not document the old and new index entries of one item as
        changing together; should a live job ever be missing from both for an instant, that one
        pass would count its instances as free, and the next pass (passes are serialized by the
        lease) sees it again.
        """
        names: set[str] = set()
        for state in sorted(ACTIVE_STATES):
            for item in self._query(STATE_INDEX, "#state", str(state), projection="#name"):
                names.add(item["name"]["S"])
        items = [item for item in self._batch_get(sorted(names)) if item["state"]["S"] in ACTIVE_STATES]
        return [from_item(item) for item in sorted(items, key=_order_key_of)]

    def pending_in_pool(self, pool: str) -> list[Job]:
        """One paginated Query of the sparse pending index (eventually consistent: for display,
        such as queue positions; scheduling decisions use active_jobs)."""
        return [from_item(item) for item in self._query(PENDING_INDEX, "#pending_pool", pool)]

    def list_jobs(
        self,
        *,
        states: Collection[JobState],
        pool: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
    ) -> JobPage:
        """One page of jobs in scheduling order, from one index Query per state, merged.

        The page token is a cursor: the order key of the page's last job (see item_codec). Each
        state's Query continues with `order_key > cursor`, so a token stays valid for any number of
        states, needs no per-state DynamoDB keys, and never returns a job twice while the jobs keep
        their priority. A job whose priority changes between two page requests moves in the order
        and may be seen twice or not at all, as in any listing of a changing queue. Eventually
        consistent, like the indexes.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        after = decode_page_token(next_token) if next_token else None
        streams: list[Iterable[Item]] = []
        for state in sorted({JobState(state) for state in states}):
            if state is JobState.PENDING and pool is not None:
                stream = self._query(PENDING_INDEX, "#pending_pool", pool, after=after, owner=owner)
            else:
                stream = self._query(STATE_INDEX, "#state", str(state), after=after, pool=pool, owner=owner)
            streams.append(itertools.islice(stream, limit + 1))
        merged = list(itertools.islice(heapq.merge(*streams, key=_order_key_of), limit + 1))
        page = merged[:limit]
        token = encode_page_token(_order_key_of(page[-1])) if len(merged) > limit else None
        return JobPage(jobs=[from_item(item) for item in page], next_token=token)

    # ------------------------------------------------------------------ helpers

    def _query(
        self,
        index: str,
        key_placeholder: str,
        key_value: str,
        *,
        after: str | None = None,
        pool: str | None = None,
        owner: str | None = None,
        projection: str | None = None,
    ) -> Iterator[Item]:
        """Items of one index partition in order_key order, read page by page as they are consumed."""
        key_condition = f"{key_placeholder} = :key"
        values: dict[str, dict[str, str]] = {":key": {"S": key_value}}
        if after is not None:
            key_condition += " AND #order_key > :after"
            values[":after"] = {"S": after}
        filters = []
        if pool is not None:
            filters.append("#pool = :pool")
            values[":pool"] = {"S": pool}
        if owner is not None:
            filters.append("#owner = :owner")
            values[":owner"] = {"S": owner}
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": index,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeValues": values,
        }
        expressions = [key_condition]
        if filters:
            request["FilterExpression"] = " AND ".join(filters)
            expressions.append(request["FilterExpression"])
        if projection is not None:
            request["ProjectionExpression"] = projection
            expressions.append(projection)
        request["ExpressionAttributeNames"] = _names(" ".join(expressions))
        if self._page_size is not None:
            request["PaginationConfig"] = {"PageSize": self._page_size}
        for page in self._client.get_paginator("query").paginate(**request):
            yield from page.get("Items", [])

    def _batch_get(self, names: list[str]) -> list[Item]:
        """Strongly consistent reads of the named items, 100 keys per call, retrying unprocessed keys."""
        items: list[Item] = []
        for start in range(0, len(names), BATCH_GET_MAX):
            keys: list[Item] = [{"name": {"S": name}} for name in names[start : start + BATCH_GET_MAX]]
            for round_number in range(BATCH_GET_ROUNDS):
                response = self._client.batch_get_item(
                    RequestItems={self._table: {"Keys": keys, "ConsistentRead": True}}
                )
                items.extend(response.get("Responses", {}).get(self._table, []))
                keys = response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
                if not keys:
                    break
                time.sleep(min(0.05 * 2**round_number, 1.0))
            else:
                raise RuntimeError(f"DynamoDB left {len(keys)} keys unprocessed after {BATCH_GET_ROUNDS} rounds")
        return items
