"""The JobStore port on the DynamoDB queue table (a low-level boto3 `dynamodb` client).

Every write is conditional (a PutItem with a condition, or a TransactWriteItems whose put is); a
failed condition becomes a typed error (JobConflict, VersionConflict) raised from the ClientError.
Every read of many jobs is a paginated Query of one of the two indexes (see item_codec for the item
layout); nothing scans the table.

    by-state         partition state         sort order_key   all jobs of one state, in order
    pending-by-pool  partition pending_pool  sort order_key   pending jobs of one pool, in order
                                                              (sparse: only pending items)

DynamoDB throttled, failing or out of reach becomes ServiceUnavailable: the codes of
adapters/dynamodb_errors, plus the transaction codes below, and any BotoCoreError (timeouts,
connection errors). Nothing the caller asked for is known to have changed, and every write is
conditional, so repeating the request later is safe: a write that timed out but landed then
conflicts. Any other error is a defect and propagates as it is.
"""

from __future__ import annotations

import heapq
import itertools
import re
import time
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.dynamodb_errors import SERVICE, error_code, unavailable_as_typed
from smq_lambda.adapters.item_codec import (
    Item,
    archive_key,
    archived,
    decode_page_token,
    encode_page_token,
    from_item,
    to_item,
)
from smq_lambda.domain.model import JOB_ID_PATTERN, MAX_EARLIER_JOBS, Job
from smq_lambda.domain.states import ACTIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import JobConflict, ServiceUnavailable, VersionConflict
from smq_lambda.ports import JobPage

STATE_INDEX = "by-state"
ACTIVE_QUERY_ORDER = (
    JobState.STARTING,
    JobState.RUNNING,
    JobState.PREEMPTING,
    JobState.STOPPING,
    JobState.PENDING,
)
"""The order `active_jobs` reads the states in: each change made outside a pass goes to a later one
(starting → running, preempting or stopping; running → preempting or stopping; preempting →
stopping or pending)."""
PENDING_INDEX = "pending-by-pool"
CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"
CONDITION_FAILED_REASON = "ConditionalCheckFailed"
BATCH_GET_MAX = 100
BATCH_GET_ROUNDS = 8
"""BatchGetItem may leave keys unprocessed under load; retry them this many times with backoff."""
CREATE_ROUNDS = 3
"""Submissions racing for a finished job's name: each round re-reads the name; one wins, the others
then see the winner's unfinished job (JobConflict)."""

TRANSACTION_BUSY_CODES = frozenset({"TransactionConflictException"})
"""Besides throttling: a write that met an item another transaction (a `create` replacing a finished
job) is writing. It changed nothing; the transaction ends within moments."""
UNAVAILABLE_REASONS = frozenset(
    {"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded", "TransactionConflict"}
)
"""Cancellation reasons of a TransactWriteItems that mean the same "not now"."""

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
    return error_code(exc) == CONDITION_FAILED


def _cancellation_codes(exc: ClientError) -> list[str]:
    """Per-action reason codes of a cancelled transaction, in the order of its actions."""
    return [str(reason.get("Code", "None")) for reason in exc.response.get("CancellationReasons", [])]


def _transaction_busy(exc: ClientError) -> ServiceUnavailable | None:
    code = error_code(exc)
    busy = code in TRANSACTION_BUSY_CODES or (
        code == TRANSACTION_CANCELED and not UNAVAILABLE_REASONS.isdisjoint(_cancellation_codes(exc))
    )
    if not busy:
        return None
    return ServiceUnavailable(SERVICE, code, str(exc.response.get("Error", {}).get("Message") or ""))


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

        no item ─────────────▶ put (attribute_not_exists)
        unfinished job ──────▶ JobConflict naming its state (ReturnValuesOnConditionCheckFailure)
        finished job ────────▶ one transaction: its item is copied under `<name>#<job_id>` (readable
                               until its TTL) and the new job is put if the name still holds that
                               very job (job id and version), so the two cannot diverge; a lost race
                               reads the name again
        this very job ───────▶ returned as stored (a retried request whose first try landed)
        """
        for _ in range(CREATE_ROUNDS):
            taken = self._put_new(job)
            if taken is None:
                return replace(job, version=1)
            holder: Item = taken.response["Item"]
            if holder["job_id"]["S"] == job.job_id:
                return from_item(holder)
            state = holder["state"]["S"]
            if JobState(state) not in TERMINAL_STATES:
                raise JobConflict(job.name, f"a job named {job.name!r} is already {state}") from taken
            stored = self._replace_finished(job, holder)
            if stored is not None:
                return stored
        raise JobConflict(job.name, f"the name {job.name!r} is being reused by another submission; try again")

    def _put_new(self, job: Job) -> ClientError | None:
        """Put version 1 where no item has the name; otherwise the failed condition, whose response
        holds the item that has the name (ReturnValuesOnConditionCheckFailure)."""
        condition = "attribute_not_exists(#name)"
        try:
            with unavailable_as_typed(_transaction_busy):
                self._client.put_item(
                    TableName=self._table,
                    Item=to_item(replace(job, version=1), ttl_days=self._ttl_days),
                    ConditionExpression=condition,
                    ExpressionAttributeNames=_names(condition),
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            return exc
        return None

    def _replace_finished(self, job: Job, finished: Item) -> Job | None:
        """Archive `finished` and put version 1 of `job` in its place, atomically; None when the name
        no longer holds `finished` (someone else got there first)."""
        earlier = from_item(finished)
        stored = replace(job, version=1, earlier_job_ids=(earlier.job_id, *earlier.earlier_job_ids)[:MAX_EARLIER_JOBS])
        condition = "#job_id = :job_id AND #version = :version"
        try:
            with unavailable_as_typed(_transaction_busy):
                self._client.transact_write_items(
                    TransactItems=[
                        {"Put": {"TableName": self._table, "Item": archived(finished)}},
                        {
                            "Put": {
                                "TableName": self._table,
                                "Item": to_item(stored, ttl_days=self._ttl_days),
                                "ConditionExpression": condition,
                                "ExpressionAttributeNames": _names(condition),
                                "ExpressionAttributeValues": {
                                    ":job_id": finished["job_id"],
                                    ":version": finished["version"],
                                },
                            }
                        },
                    ]
                )
        except ClientError as exc:
            if error_code(exc) == TRANSACTION_CANCELED and CONDITION_FAILED_REASON in _cancellation_codes(exc):
                return None
            raise
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
            with unavailable_as_typed(_transaction_busy):
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

    def get(self, name: str, *, job_id: str | None = None) -> Job | None:
        """The newest job of the name; with `job_id`, that job, newest or earlier (until its TTL)."""
        if job_id is not None and not JOB_ID_PATTERN.fullmatch(job_id):
            return None
        item = self._get_item(name)
        if job_id is not None and (item is None or item["job_id"]["S"] != job_id):
            item = self._get_item(archive_key(name, job_id))
        return None if item is None else from_item(item)

    def _get_item(self, key: str) -> Mapping[str, Any] | None:
        with unavailable_as_typed(_transaction_busy):
            response = self._client.get_item(TableName=self._table, Key={"name": {"S": key}}, ConsistentRead=True)
        item: Mapping[str, Any] | None = response.get("Item")
        return item

    def active_jobs(self) -> list[Job]:
        """Every pending and live job in scheduling order, each as the base table holds it now.

        Global secondary indexes are eventually consistent: an index entry can lag a write by a
        moment, showing an old state or version. The scheduler writes every change conditionally
        on the version it read here, so a stale version could only make its writes lose; but a
        stale *state* would count capacity wrongly (a job that just started still looking
        pending). So the indexes only say which names are active, and the items themselves are then
        read with a strongly consistent BatchGetItem; jobs that have finished meanwhile drop out.

        The states are queried one after another, in ACTIVE_QUERY_ORDER: every state change made
        outside a pass (a SageMaker event, an API cancel) moves a job to a state queried later, so
        a job moving while this reads is listed under its old state or its new one (names are
        de-duplicated), and the re-read gives its current state either way. (In alphabetical order
        a job moving starting → running between the two queries was in neither answer, and its
        instances counted as free.) A job just
        submitted may be missing for a moment: it waits for the next pass, which its submission
        triggers anyway. DynamoDB does not document the old and new index entries of one item as
        changing together; should a live job ever be missing from both for an instant, that one
        pass would count its instances as free, and the next pass (passes are serialized by the
        lease) sees it again.
        """
        names: set[str] = set()
        for state in ACTIVE_QUERY_ORDER:
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
        pages = iter(self._client.get_paginator("query").paginate(**request))
        while True:
            with unavailable_as_typed(_transaction_busy):
                page = next(pages, None)
            if page is None:
                return
            yield from page.get("Items", [])

    def _batch_get(self, names: list[str]) -> list[Item]:
        """Strongly consistent reads of the named items, 100 keys per call, retrying unprocessed keys."""
        items: list[Item] = []
        for start in range(0, len(names), BATCH_GET_MAX):
            keys: list[Item] = [{"name": {"S": name}} for name in names[start : start + BATCH_GET_MAX]]
            for round_number in range(BATCH_GET_ROUNDS):
                with unavailable_as_typed(_transaction_busy):
                    response = self._client.batch_get_item(
                        RequestItems={self._table: {"Keys": keys, "ConsistentRead": True}}
                    )
                items.extend(response.get("Responses", {}).get(self._table, []))
                keys = response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
                if not keys:
                    break
                time.sleep(min(0.05 * 2**round_number, 1.0))
            else:
                raise ServiceUnavailable(
                    SERVICE,
                    "UnprocessedKeys",
                    f"batch get left {len(keys)} keys unread after {BATCH_GET_ROUNDS} rounds",
                )
        return items
