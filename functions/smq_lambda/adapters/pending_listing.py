"""A pending job's listing items: how a job that may use several pools is in each pool's front.

A pass reads only the first jobs of each pool's pending partition (scheduling/queue_front.py). A job
is listed there by its own item under its first pool (`pending_pool`, item_codec.py); a job that
may use other pools (`Job.where.pools`: a heterogeneous job's other instance groups, a flexible
job's other preferences' pools) has one more item per other pool:

    name                       S  `#listing#<pool>#<job name>` (pools and job names never contain '#')
    pending_pool               S  that pool
    pending_team               S  `<pool>#<team>` (`<pool>#` for no team)
    order_key                  S  the job's
    the pending projection        the job item's values of what the pending indexes project
                                  (LISTED_ATTRIBUTES), but not `state`

so a front's Query of either pending index decodes it to the same `Job` as the job's own item
(`pending_job`). It has no `state`, `owner_state` or `attempt_end_day`: it is in no other index,
never listed by GET /jobs, never archived, and has no TTL.

The job's item and its listing items never disagree for long: every write of a job with other
pools writes them in the same TransactWriteItems, conditional on the job's version as any save
is (`listing_changes`): while pending each is put again (the version, priority and reason it shows
change with every save), and on leaving pending (starting, failed, cancelled) each is deleted. A
job written before listing items existed gets them on its next save. The cost: one more write
per other pool per save of a pending multi-pool job, and a transaction (twice a single write's
units) where a pinned single-pool job keeps one UpdateItem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smq_lambda.adapters.item_codec import ARCHIVE_SEPARATOR, Item, from_item, pending_team_key
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import TRANSITIONS, JobState

LISTING_PREFIX = "#listing#"
LISTED_ATTRIBUTES = (
    "job_id",
    "priority",
    "submitted_at",
    "demand",
    "pool",
    "owner",
    "version",
    "attempts",
    "earlier_attempts",
    "start_failures",
    "reason",
    "not_before",
    "updated_at",
    "team",
    "expected_duration_s",
    "max_runtime_s",
    "family",
    "budget_override",
    "placements",
    "purchase",
    "warm_key",
)
"""What template.yaml's pending indexes project, but `state` (the by-state index's key)."""
LEFT_PENDING = TRANSITIONS[JobState.PENDING]
"""The states a pending job may enter: a save into one deletes its listing items."""


def listing_key(pool: str, name: str) -> str:
    return f"{LISTING_PREFIX}{pool}{ARCHIVE_SEPARATOR}{name}"


def listing_changes(job: Job, item: Item) -> dict[str, Item | None]:
    """The listing items a write of `job` (stored as `item`) puts, and the keys it deletes (None):
    each other pool's item while the job is pending, none once it left pending (a state it may
    enter from pending: it may have been pending before), nothing otherwise."""
    others = job.where.pools[1:]
    if job.state is JobState.PENDING:
        return {listing_key(pool, job.name): _listing_item(item, pool, job.name, job.team) for pool in others}
    if job.state in LEFT_PENDING:
        return dict.fromkeys((listing_key(pool, job.name) for pool in others), None)
    return {}


def pending_job(item: Mapping[str, Mapping[str, Any]]) -> Job:
    """The job an item of a pending index shows, whether the job's own item or a listing item."""
    key = item["name"]["S"]
    if not key.startswith(LISTING_PREFIX):
        return from_item(item)
    name = key.rpartition(ARCHIVE_SEPARATOR)[2]
    return from_item({**item, "name": {"S": name}, "state": {"S": str(JobState.PENDING)}})


def _listing_item(item: Item, pool: str, name: str, team: str | None) -> Item:
    listed = {attribute: item[attribute] for attribute in LISTED_ATTRIBUTES if attribute in item}
    listed["name"] = {"S": listing_key(pool, name)}
    listed["order_key"] = item["order_key"]
    listed["pending_pool"] = {"S": pool}
    listed["pending_team"] = {"S": pending_team_key(pool, team)}
    return listed
