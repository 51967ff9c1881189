"""The JobStore port on the DynamoDB queue table (a low-level boto3 `dynamodb` client).

What a scheduling pass reads is bounded by capacity, not by the depth of the queue:

* **Live jobs are read by key, never through an index.** Each pool has a usage item
  (`#pool#<instance type>`) whose `live` string set names the live jobs holding its instances. A
  save changes the job and its pools' `live` sets in one TransactWriteItems, so at every committed
  moment a job is live exactly when its pools name it, and `in_use` reads the sets and then the
  jobs with strongly consistent reads. Only a pass makes a job live (passes are serialized by the
  lease), so while a pass reads, jobs can only leave the sets: what it counts as held is never less
  than what is held. (The by-state index, eventually consistent, could show a job that has just
  started as still pending, and a pass reading it would count that job's instances as free.)
* **Pending jobs are read a window at a time**: the first few of a pool from the sparse pending
  index, which projects what a decision needs and not the request. Positions are Select=COUNT
  Queries of the same index, made when someone asks.
* **Training jobs outside the queue** are kept in the pool items (`outside`, elements
  `<training job>=<instances>`) from their state-change events, and replaced by what SageMaker lists
  during reconciliation.
* The registry item `#pools` names every pool a job was submitted to or an outside job used, so a
  pass knows which usage items exist without a scan.

Every write is conditional (a PutItem with a condition, or a TransactWriteItems whose job update
is); a failed condition becomes a typed error (JobConflict, VersionConflict) raised from the
ClientError. Nothing scans the table.

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

import hashlib
import heapq
import itertools
import json
import re
import time
import uuid
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.dynamodb_errors import SERVICE, error_code, unavailable_as_typed
from smq_lambda.adapters.item_codec import (
    IMMUTABLE_ATTRIBUTES,
    OPTIONAL_ATTRIBUTES,
    Item,
    archive_key,
    archived,
    decode_page_token,
    encode_page_token,
    from_item,
    to_item,
)
from smq_lambda.domain.model import JOB_ID_PATTERN, MAX_EARLIER_JOBS, Job
from smq_lambda.domain.states import ENTERED_ONLY_WHILE_LIVE, LIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import JobConflict, ServiceUnavailable, VersionConflict
from smq_lambda.ports import InUse, JobPage

STATE_INDEX = "by-state"
PENDING_INDEX = "pending-by-pool"
CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"
CONDITION_FAILED_REASON = "ConditionalCheckFailed"
BATCH_GET_MAX = 100
BATCH_GET_ROUNDS = 8
"""BatchGetItem may leave keys unprocessed under load; retry them this many times with backoff."""
REMEMBERED_REQUESTS = 10_000
"""Request digests kept for saves (a few hundred bytes each); forgetting them costs only bytes."""
SAVE_ROUNDS = 3
"""A save whose transaction met another on the same pool item (TransactionConflict) changed
nothing; it is tried again this many times before it is reported as ServiceUnavailable."""
POOLS_KEY = "#pools"
POOL_KEY_PREFIX = "#pool#"
"""Job names never contain '#', so neither key can be a job's; they carry no indexed attribute, so
they are in no index, and no TTL."""
OUTSIDE_SEPARATOR = "="
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
        self._requests_read: dict[tuple[str, str, int], str] = {}
        """The request of each job version this store read or wrote (its digest), so a save sends the
        request only when it changed (a spot fallback rewrites it) or is not known to be stored."""

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
        self._register_pools(job.demand)
        self._remember_request(job.name, job.job_id, 1, request_digest(job.request))
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
        """Update `job` if the stored item is still version `expected_version` of the same submission.

        The job id is part of the condition because versions restart at 1 when a finished job's name
        is reused: without it, a writer holding the old job at version 1 could overwrite the new one.
        An UpdateItem of the attributes that change. A job that has ever had an attempt may be
        entering or leaving the live states, so its pools' `live` sets are updated in the same
        transaction (adding a member twice or removing an absent one changes nothing, so the old
        state need not be known), except when the state machine says it was live already (it enters
        running, preempting or stopping); a job that never had an attempt was never live.
        """
        if job.version != expected_version + 1:
            raise ValueError(f"job {job.name!r} must be saved as version {expected_version + 1}, not {job.version}")
        if not job.request:
            raise ValueError(f"job {job.name!r} is a summary of the pending index (no request): read it by key first")
        digest = request_digest(job.request)
        known = self._requests_read.get((job.name, job.job_id, expected_version))
        update = self._job_update(job, expected_version, with_request=known != digest)
        if not job.attempts or job.state in ENTERED_ONLY_WHILE_LIVE:
            self._update_job(update, job.name)
        else:
            self._transact([{"Update": update}, *self._live_updates(job)], job.name)
        self._remember_request(job.name, job.job_id, job.version, digest)
        return job

    def _live_updates(self, job: Job) -> list[dict[str, Any]]:
        """The job's name added to (live) or removed from (otherwise) each of its pools' `live` sets."""
        operation = "ADD" if job.state in LIVE_STATES else "DELETE"
        members = {":member": {"SS": [job.name]}}
        return [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": {"name": {"S": pool_key(pool)}},
                    "UpdateExpression": f"{operation} #live :member",
                    "ExpressionAttributeNames": {"#live": "live"},
                    "ExpressionAttributeValues": members,
                }
            }
            for pool in job.demand
        ]

    def _remember_request(self, name: str, job_id: str, version: int, digest: str) -> None:
        if len(self._requests_read) >= REMEMBERED_REQUESTS:
            self._requests_read.clear()
        self._requests_read[(name, job_id, version)] = digest

    def _job_update(self, job: Job, expected_version: int, *, with_request: bool) -> dict[str, Any]:
        """The UpdateItem request that turns the stored item into `job`'s, if still at `expected_version`."""
        item = to_item(job, ttl_days=self._ttl_days)
        if not with_request:
            del item["request"]
        names = {"#version": "version", "#job_id": "job_id"}
        values: dict[str, Any] = {":expected": {"N": str(expected_version)}, ":job_id": {"S": job.job_id}}
        sets = []
        for index, (attribute, value) in enumerate(sorted(item.items())):
            if attribute in IMMUTABLE_ATTRIBUTES:
                continue
            names[f"#a{index}"] = attribute
            values[f":a{index}"] = value
            sets.append(f"#a{index} = :a{index}")
        removes = []
        for index, attribute in enumerate(OPTIONAL_ATTRIBUTES):
            if attribute not in item:
                names[f"#r{index}"] = attribute
                removes.append(f"#r{index}")
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        return {
            "TableName": self._table,
            "Key": {"name": {"S": job.name}},
            "UpdateExpression": expression,
            "ConditionExpression": "#version = :expected AND #job_id = :job_id",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }

    def _update_job(self, update: Mapping[str, Any], name: str) -> None:
        try:
            with unavailable_as_typed(_transaction_busy):
                self._client.update_item(**update)
        except ClientError as exc:
            if _condition_failed(exc):
                raise VersionConflict(name) from exc
            raise

    def _transact(self, actions: list[dict[str, Any]], name: str) -> None:
        """One transaction whose first action is the job's conditional update; a failed condition is
        VersionConflict, and a conflict with another transaction or an unanswered call is tried
        again a few times under the same client token, so a try whose answer was lost but which
        landed succeeds again instead of failing its own condition (DynamoDB keeps the token ten
        minutes)."""
        token = uuid.uuid4().hex
        for round_number in range(SAVE_ROUNDS):
            try:
                with unavailable_as_typed(_transaction_busy):
                    self._client.transact_write_items(TransactItems=actions, ClientRequestToken=token)
                return
            except ClientError as exc:
                if error_code(exc) == TRANSACTION_CANCELED and _cancellation_codes(exc)[:1] == [
                    CONDITION_FAILED_REASON
                ]:
                    raise VersionConflict(name) from exc
                raise
            except ServiceUnavailable:
                if round_number == SAVE_ROUNDS - 1:
                    raise
                time.sleep(0.02 * 2**round_number)

    def record_outside(self, training_job_name: str, demand: Mapping[str, int], *, holding: bool) -> None:
        """Add (or remove) `<training job>=<instances>` in each pool's `outside` set."""
        if holding:
            self._register_pools(demand)
        operation = "ADD" if holding else "DELETE"
        for pool, count in demand.items():
            with unavailable_as_typed(_transaction_busy):
                self._client.update_item(
                    TableName=self._table,
                    Key={"name": {"S": pool_key(pool)}},
                    UpdateExpression=f"{operation} #outside :entry",
                    ExpressionAttributeNames={"#outside": "outside"},
                    ExpressionAttributeValues={":entry": {"SS": [outside_entry(training_job_name, count)]}},
                )

    def replace_outside(self, jobs: Mapping[str, Mapping[str, int]]) -> None:
        """Set every known pool's `outside` set to what `jobs` holds there (removed when empty)."""
        entries: dict[str, list[str]] = {}
        for name, demand in jobs.items():
            for pool, count in demand.items():
                entries.setdefault(pool, []).append(outside_entry(name, count))
        self._register_pools(dict.fromkeys(entries, 0))
        for pool in sorted(self._registered_pools() | set(entries)):
            request: dict[str, Any] = {
                "TableName": self._table,
                "Key": {"name": {"S": pool_key(pool)}},
                "ExpressionAttributeNames": {"#outside": "outside"},
            }
            if entries.get(pool):
                request["UpdateExpression"] = "SET #outside = :entries"
                request["ExpressionAttributeValues"] = {":entries": {"SS": sorted(entries[pool])}}
            else:
                request["UpdateExpression"] = "REMOVE #outside"
            with unavailable_as_typed(_transaction_busy):
                self._client.update_item(**request)

    def _register_pools(self, demand: Mapping[str, int]) -> None:
        """Name the pools in the registry (before any job or outside job of them is written)."""
        if not demand:
            return
        with unavailable_as_typed(_transaction_busy):
            self._client.update_item(
                TableName=self._table,
                Key={"name": {"S": POOLS_KEY}},
                UpdateExpression="ADD #pools :pools",
                ExpressionAttributeNames={"#pools": "pools"},
                ExpressionAttributeValues={":pools": {"SS": sorted(demand)}},
            )

    # ------------------------------------------------------------------ reads

    def get(self, name: str, *, job_id: str | None = None) -> Job | None:
        """The newest job of the name; with `job_id`, that job, newest or earlier (until its TTL)."""
        if job_id is not None and not JOB_ID_PATTERN.fullmatch(job_id):
            return None
        item = self._get_item(name)
        if job_id is not None and (item is None or item["job_id"]["S"] != job_id):
            item = self._get_item(archive_key(name, job_id))
        return None if item is None else self._read(item)

    def _read(self, item: Item) -> Job:
        """A whole item's job, its request remembered for the next save."""
        job = from_item(item)
        self._remember_request(item["name"]["S"], job.job_id, job.version, request_digest(job.request))
        return job

    def _get_item(self, key: str) -> Mapping[str, Any] | None:
        with unavailable_as_typed(_transaction_busy):
            response = self._client.get_item(TableName=self._table, Key={"name": {"S": key}}, ConsistentRead=True)
        item: Mapping[str, Any] | None = response.get("Item")
        return item

    def in_use(self) -> InUse:
        """The registry, the pools' usage items, then the live jobs they name: all by key, strongly
        consistent (see the module docstring for why this count is exact)."""
        pools = self._registered_pools()
        live_names: set[str] = set()
        outside: dict[str, int] = {}
        for item in self._batch_get([pool_key(pool) for pool in sorted(pools)]):
            pool = item["name"]["S"].removeprefix(POOL_KEY_PREFIX)
            live_names.update(item.get("live", {}).get("SS", []))
            held = sum(outside_count(entry) for entry in item.get("outside", {}).get("SS", []))
            if held:
                outside[pool] = held
        items = [item for item in self._batch_get(sorted(live_names)) if item["state"]["S"] in LIVE_STATES]
        live = [self._read(item) for item in sorted(items, key=_order_key_of)]
        return InUse(live=live, outside=outside, pools=frozenset(pools))

    def _registered_pools(self) -> set[str]:
        item = self._get_item(POOLS_KEY)
        return set(item["pools"]["SS"]) if item is not None and "pools" in item else set()

    def pending_window(self, pool: str, limit: int) -> list[Job]:
        """At most `limit` items of one pool's pending partition, read in pages of at most `limit`."""
        if limit < 1:
            return []
        page_size = min(limit, self._page_size or limit)
        items = self._query(PENDING_INDEX, "#pending_pool", pool, page_size=page_size)
        return [from_item(item) for item in itertools.islice(items, limit)]

    def count_pending(self, pool: str, *, after: str | None = None, before: str | None = None) -> int:
        """Select=COUNT, page by page (a COUNT still reads the index items it counts, 1 MB a page)."""
        if after is not None and before is not None and after >= before:
            return 0
        key_condition = "#pending_pool = :key"
        values: dict[str, Any] = {":key": {"S": pool}}
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
            "IndexName": PENDING_INDEX,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeNames": _names(key_condition),
            "ExpressionAttributeValues": values,
            "Select": "COUNT",
        }
        total = 0
        pages = iter(self._client.get_paginator("query").paginate(**request))
        while True:
            with unavailable_as_typed(_transaction_busy):
                page = next(pages, None)
            if page is None:
                break
            total += int(page.get("Count", 0))
        if after is not None and before is not None:
            total -= sum(1 for key in (after, before) if self._pending_key_exists(pool, key))
        return max(total, 0)

    def _pending_key_exists(self, pool: str, key: str) -> bool:
        """BETWEEN includes its bounds: whether a pending job of `pool` has order key `key`."""
        condition = "#pending_pool = :key AND #order_key = :order_key"
        with unavailable_as_typed(_transaction_busy):
            response = self._client.query(
                TableName=self._table,
                IndexName=PENDING_INDEX,
                KeyConditionExpression=condition,
                ExpressionAttributeNames=_names(condition),
                ExpressionAttributeValues={":key": {"S": pool}, ":order_key": {"S": key}},
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
        page_size: int | None = None,
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
        request["ExpressionAttributeNames"] = _names(" ".join(expressions))
        page_size = page_size or self._page_size
        if page_size is not None:
            request["PaginationConfig"] = {"PageSize": page_size}
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


def pool_key(pool: str) -> str:
    return f"{POOL_KEY_PREFIX}{pool}"


def outside_entry(training_job_name: str, instances: int) -> str:
    return f"{training_job_name}{OUTSIDE_SEPARATOR}{instances}"


def outside_count(entry: str) -> int:
    """The instances of an `outside` element (training job names never contain '=')."""
    return int(entry.rpartition(OUTSIDE_SEPARATOR)[2])


def request_digest(request: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
