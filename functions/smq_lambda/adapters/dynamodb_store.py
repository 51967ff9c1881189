"""The JobStore port on the DynamoDB queue table (a low-level boto3 `dynamodb` client).

What a scheduling pass reads is bounded by capacity, not by the depth of the queue:

* **Live jobs are read by key, never through an index.** A save changes the job and its pools'
  `live` sets in one TransactWriteItems (see dynamodb_pool_holders), and `in_use` reads the sets
  and then the jobs with strongly consistent reads. Only a pass makes a job live (passes are
  serialized by the lease), so while a pass reads, jobs can only leave the sets: what it counts as
  held is never less than what is held. (The by-state index, eventually consistent, could show a
  job that has just started as still pending, and a pass reading it would count that job's
  instances as free.)
* **Pending jobs are read a queue front at a time** through the pending index (see dynamodb_indexes);
  a job that may use several pools is in each one's front (pending_listing).
* Training jobs outside the queue and the registry of pools are kept in the pool items
  (dynamodb_pool_holders).

Every write is conditional (a PutItem with a condition, or a TransactWriteItems whose job update
is); a failed condition becomes a typed error (JobConflict, VersionConflict) raised from the
ClientError. Nothing scans the table. What DynamoDB being throttled or out of reach becomes is
said in dynamodb_table.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from smq_lambda.adapters.dynamodb_attempts import DynamoAttemptHistory
from smq_lambda.adapters.dynamodb_errors import condition_failed, error_code, unavailable_as_typed
from smq_lambda.adapters.dynamodb_indexes import JobIndexes, order_key_of
from smq_lambda.adapters.dynamodb_pool_holders import PoolHolderItems
from smq_lambda.adapters.dynamodb_save_requests import job_update, listing_actions, transact_job, update_job
from smq_lambda.adapters.dynamodb_table import (
    CONDITION_FAILED_REASON,
    TRANSACTION_CANCELED,
    batch_get,
    cancellation_codes,
    get_item,
    names,
    transaction_busy,
)
from smq_lambda.adapters.item_codec import ARCHIVE_SEPARATOR, Item, archive_key, archived, from_item, to_item
from smq_lambda.domain.jobs.model import JOB_ID_PATTERN, MAX_EARLIER_JOBS, Job
from smq_lambda.domain.jobs.states import ENTERED_ONLY_WHILE_LIVE, LIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.domain.placements.purchase import spot_pool
from smq_lambda.errors import JobConflict, ServiceUnavailable
from smq_lambda.ports import HistoryEntry, HistoryPosition, InUse, JobPage

logger = Logger(service="smq", child=True)

REMEMBERED_REQUESTS = 10_000
"""Request digests kept for saves (a few hundred bytes each); forgetting them costs only bytes."""
CREATE_ROUNDS = 3
"""Submissions racing for a finished job's name: each round re-reads the name; one wins, the others
then see the winner's unfinished job (JobConflict)."""


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
        self._pools = PoolHolderItems(table_name, client)
        self._indexes = JobIndexes(table_name, client, page_size=page_size)
        self._attempts = DynamoAttemptHistory(table_name, client)
        self._requests_read: dict[tuple[str, str, int], str] = {}
        """The request of each job version this store read or wrote (its digest), so a save sends the
        request only when it changed (a spot fallback rewrites it) or is not known to be stored."""

    # ------------------------------------------------------------------ writes

    def create(self, job: Job, *, register_team: bool = False) -> Job:
        """Put version 1 of a job unless an unfinished job holds the name (and with `register_team`,
        register its team tag value on the `#pools` item: dynamodb_pool_holders.py).

        no item ─────────────▶ put (attribute_not_exists)
        unfinished job ──────▶ JobConflict naming its state (ReturnValuesOnConditionCheckFailure)
        finished job ────────▶ one transaction: its item is copied under `<name>#<job_id>` (readable
                               until its TTL) and the new job is put if the name still holds that
                               very job (job id and version), so the two cannot diverge; a lost race
                               reads the name again
        this very job ───────▶ returned as stored (a retried request whose first try landed)
        """
        team = job.team if register_team else None
        spot_pools = [spot_pool(instance_type) for instance_type in job.where.pools if job.purchase.spot]
        pools = (*job.where.pools, *spot_pools)  # a spot job may hold its types' spot pools
        self._pools.register(pools, team=team, at=int(job.submitted_at.timestamp()))
        self._remember_request(job.name, job.job_id, 1, request_digest(job.request))
        for _ in range(CREATE_ROUNDS):
            taken = self._put_new(job)
            if taken is None:
                return self._team_submitted(replace(job, version=1), team)
            holder = _holder(taken)
            if holder["job_id"]["S"] == job.job_id:
                return from_item(holder)
            state = holder["state"]["S"]
            if JobState(state) not in TERMINAL_STATES:
                raise JobConflict(job.name, f"a job named {job.name!r} is already {state}") from taken
            stored = self._replace_finished(job, holder)
            if stored is not None:
                return self._team_submitted(stored, team)
        raise JobConflict(job.name, f"the name {job.name!r} is being reused by another submission; try again")

    def _team_submitted(self, job: Job, team: str | None) -> Job:
        """Set the time of the registered team tag value's latest submission, now that its job is
        written (so a pass cannot forget the value while the job is on its way into the index). The
        job is queued whatever happens here: a throttled table leaves the time of an earlier one."""
        if team:
            try:
                self._pools.submitted_team(team, int(job.submitted_at.timestamp()))
            except ServiceUnavailable as exc:
                logger.warning("team tag submission time not recorded", extra={"error": str(exc)})
        return job

    def _put_new(self, job: Job) -> ClientError | None:
        """Put version 1 where no item has the name (with its listing items, in one transaction);
        otherwise the failed condition, whose response holds the item that has the name
        (ReturnValuesOnConditionCheckFailure: `_holder`)."""
        condition = "attribute_not_exists(#name)"
        item = to_item(replace(job, version=1), ttl_days=self._ttl_days)
        put = {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names(condition),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        listings = listing_actions(self._table, job, item)
        try:
            with unavailable_as_typed(transaction_busy):
                if listings:
                    self._client.transact_write_items(TransactItems=[{"Put": put}, *listings])
                else:
                    self._client.put_item(**put)
        except ClientError as exc:
            if condition_failed(exc) or (
                error_code(exc) == TRANSACTION_CANCELED and cancellation_codes(exc)[:1] == [CONDITION_FAILED_REASON]
            ):
                return exc
            raise
        return None

    def _replace_finished(self, job: Job, finished: Item) -> Job | None:
        """Archive `finished` and put version 1 of `job` in its place, atomically; None when the name
        no longer holds `finished` (someone else got there first)."""
        earlier = from_item(finished)
        stored = replace(job, version=1, earlier_job_ids=(earlier.job_id, *earlier.earlier_job_ids)[:MAX_EARLIER_JOBS])
        condition = "#job_id = :job_id AND #version = :version"
        item = to_item(stored, ttl_days=self._ttl_days)
        try:
            with unavailable_as_typed(transaction_busy):
                self._client.transact_write_items(
                    TransactItems=[
                        {"Put": {"TableName": self._table, "Item": archived(finished)}},
                        {
                            "Put": {
                                "TableName": self._table,
                                "Item": item,
                                "ConditionExpression": condition,
                                "ExpressionAttributeNames": names(condition),
                                "ExpressionAttributeValues": {
                                    ":job_id": finished["job_id"],
                                    ":version": finished["version"],
                                },
                            }
                        },
                        *listing_actions(self._table, stored, item),
                    ]
                )
        except ClientError as exc:
            if error_code(exc) == TRANSACTION_CANCELED and CONDITION_FAILED_REASON in cancellation_codes(exc):
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
        running, preempting or stopping); a job that never had an attempt was never live. A job that
        may use other pools has its listing items put or deleted in the same transaction
        (pending_listing.py); any other job is written by one UpdateItem (dynamodb_save_requests.py).
        """
        if job.version != expected_version + 1:
            raise ValueError(f"job {job.name!r} must be saved as version {expected_version + 1}, not {job.version}")
        if not job.request:
            raise ValueError(f"job {job.name!r} is a summary of the pending index (no request): read it by key first")
        digest = request_digest(job.request)
        known = self._requests_read.get((job.name, job.job_id, expected_version))
        item = to_item(job, ttl_days=self._ttl_days)
        update = job_update(self._table, job, item, expected_version, with_request=known != digest)
        live = [] if not job.attempts or job.state in ENTERED_ONLY_WHILE_LIVE else self._pools.live_updates(job)
        listings = listing_actions(self._table, job, item)
        if live or listings:
            transact_job(self._client, [{"Update": update}, *live, *listings], job.name)
        else:
            update_job(self._client, update, job.name)
        self._remember_request(job.name, job.job_id, job.version, digest)
        return job

    def _remember_request(self, name: str, job_id: str, version: int, digest: str) -> None:
        if len(self._requests_read) >= REMEMBERED_REQUESTS:
            self._requests_read.clear()
        self._requests_read[(name, job_id, version)] = digest

    def record_outside(self, training_job_name: str, demand: Mapping[str, int], *, holding: bool) -> None:
        self._pools.record_outside(training_job_name, demand, holding=holding)

    def replace_outside(self, jobs: Mapping[str, Mapping[str, int]]) -> None:
        self._pools.replace_outside(jobs)

    # ------------------------------------------------------------------ reads

    def get(self, name: str, *, job_id: str | None = None) -> Job | None:
        """The newest job of the name; with `job_id`, that job, newest or earlier (until its TTL). A
        name with '#' is no job's: the table's other keys (item_codec) have it."""
        if ARCHIVE_SEPARATOR in name or (job_id is not None and not JOB_ID_PATTERN.fullmatch(job_id)):
            return None
        item = get_item(self._client, self._table, name)
        if job_id is not None and (item is None or item["job_id"]["S"] != job_id):
            item = get_item(self._client, self._table, archive_key(name, job_id))
        return None if item is None else self._read(item)

    def _read(self, item: Item) -> Job:
        """A whole item's job, its request remembered for the next save."""
        job = from_item(item)
        self._remember_request(item["name"]["S"], job.job_id, job.version, request_digest(job.request))
        return job

    def in_use(self) -> InUse:
        """The pools' usage items, then the live jobs they name: all by key, strongly consistent (see
        the module docstring for why this count is exact)."""
        holders = self._pools.read()
        live_items = batch_get(self._client, self._table, sorted(holders.live_names))
        items = [item for item in live_items if item["state"]["S"] in LIVE_STATES]
        live = [self._read(item) for item in sorted(items, key=order_key_of)]
        team_tags = {team: datetime.fromtimestamp(at, UTC) for team, at in holders.team_tags.items()}
        return InUse(live=live, outside=holders.outside, pools=holders.pools, team_tags=team_tags)

    def forget_team_tag(self, team: str, registered_at: datetime) -> None:
        self._pools.forget_team(team, int(registered_at.timestamp()))

    def pending_front(self, pool: str, limit: int, *, team: str | None = None) -> list[Job]:
        return self._indexes.pending_front(pool, limit, team=team)

    def count_pending(
        self, pool: str, *, after: str | None = None, before: str | None = None, team: str | None = None
    ) -> int:
        return self._indexes.count_pending(pool, after=after, before=before, team=team)

    def list_jobs(
        self,
        *,
        states: Collection[JobState],
        pool: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
    ) -> JobPage:
        return self._indexes.list_jobs(states=states, pool=pool, owner=owner, limit=limit, next_token=next_token)

    def jobs_with_attempts_since(
        self, start: datetime, now: datetime, *, after: HistoryPosition | None = None, page_size: int | None = None
    ) -> Iterator[HistoryEntry]:
        return self._attempts.jobs_with_attempts_since(start, now, after=after, page_size=page_size)


def _holder(taken: ClientError) -> Item:
    """The item that has the name, returned by a failed PutItem or by a transaction's failed Put."""
    returned = taken.response["CancellationReasons"][0] if "CancellationReasons" in taken.response else taken.response
    holder: Item = returned["Item"]
    return holder


def request_digest(request: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
