"""A Job as a DynamoDB item (low-level AttributeValue form) and back.

One codec for the DynamoDB store and the in-memory fake, so both keep exactly the same attributes.
Its lists of maps (attempts, placements, history) are in attempt_codec.py, the shared attribute
values (times, bounded text, optional attributes) in attribute_values.py.

Item layout (partition key `name`):

    name, job_id, state, owner, pool            S
    priority, version, start_failures           N
    submitted_at, updated_at, not_before        S  ISO 8601 UTC with `Z` (absent when None)
    demand                                      M  {instance type: N}: where the job is listed (a
                                                   flexible job's first preference)
    placements                                  L  of M (instance_type, count, pool, plans, spot,
                                                   plan, warm_key): a flexible job's preferences
                                                   (absent when pinned)
    attempts                                    L  of M (number, training_job_name, started_at, ...):
                                                   the most recent MAX_INLINE_ATTEMPTS only; each
                                                   has its `placement` (M, as above, plus the
                                                   `warm_pool` it started on; absent for instance
                                                   groups and in items of releases before 0.1.0),
                                                   one whose keep-alive the queue decided its
                                                   `keep_alive_s` (N)
    earlier_attempts                            N  attempts no longer kept in full (absent when 0)
    earlier_outcomes                            M  {outcome: N} of those (absent when empty)
    history                                     L  of M (at, by, what): notable changes, the most
                                                   recent MAX_HISTORY (absent when empty)
    earlier_job_ids                             L  of S: earlier jobs of the name, newest first
                                                   (absent when empty)
    reason                                      S  (absent when None)
    team                                        S  the team tag's value at submission (absent when None)
    family                                      S  the `smq:family` tag's value at submission (absent
                                                   when None)
    budget_override                             BOOL  true when tagged `smq:budget-override` (absent
                                                   when false)
    purchase                                    S  spot or spot_only (domain/placements/purchase.py; absent: on demand)
    warm_key                                    S  the warm-pool matching digest (domain/warm/warm_pools.py;
                                                   absent when it leaves and reuses none)
    expected_duration_s, max_runtime_s          N  the `smq:expected-duration` tag and StoppingCondition.
                                                   MaxRuntimeInSeconds, in seconds (absent when None)
    request                                     S  JSON text: the CreateTrainingJob dict exactly as
                                                   submitted (a map would turn ints into Decimals
                                                   and drop key order)
    order_key                                   S  sort key of every index (scheduling order)
    owner_state                                 S  `<owner>#<state>`: the key of the `by-owner` index
    pending_pool                                S  only while pending: the sparse `pending-by-pool`
                                                   index holds pending jobs and nothing else
    pending_team                                S  only while pending: `<pool>#<team>` (`<pool>#` for
                                                   no team), the key of the sparse `pending-by-team`
                                                   index: one team's pending jobs of one pool
    expires_at                                  N  only in terminal states: the table's TTL
    attempt_end_day, attempt_end                S  only once an attempt has ended: the UTC day
                                                   (`2026-11-26`) and time of the latest end, the
                                                   key of the sparse `by-attempt-end` index (GET
                                                   /attempts); an archived job keeps them

Free texts (reasons, what a change did) are stored up to MAX_TEXT_CHARS characters, so that with
the bounded lists above and the API's 256 KB request limit a job always fits DynamoDB's 400 KB item.

Items written before `team`, `expected_duration_s`, `max_runtime_s`, `family` and `pending_team`
existed decode with None for the four fields; such a pending job is in no team's front until its
next write (every pool's front still shows it), and its family comes from its name. The pending
indexes project the four fields: a stack deployed before them must have its pending indexes
recreated, since DynamoDB cannot change a GSI's projection in place (see the QueueTable comment in template.yaml). They project `budget_override`
and `purchase` too (a pass decides over the fronts it reads); an item without them is a job not
overridden, on demand (a spot job queued before `purchase` existed counts in its type's pool).
They project `warm_key`: a job queued before it existed reuses no warm pool.

Items written before `owner_state` existed are in no owner's listing until their next write sets
it (a save writes every attribute but the immutable ones); a finished one, never written again,
stays out of it until its TTL.

Earlier jobs of a reused name (see `archived`) live under the key `<name>#<job_id>`, with no
`order_key`, `owner_state`, `pending_pool` or `pending_team`: they are in no index. The table's
other keys cannot collide with a job or with each other: job names never contain '#' (and never
'.', which every idempotency record key `<function>#<hash>` has); the scheduler lease is
`#scheduler-lease`, the pass summary `#pool-usage`, the teams' usage `#team-usage` and a pending
job's listing item in another pool `#listing#<pool>#<name>` (pending_listing.py: it is in the
pending indexes only), which no job name starts with.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from smq_lambda.adapters.attempt_codec import (
    attempt_from_map,
    attempt_to_map,
    change_from_map,
    change_to_map,
    placement_from_map,
    placement_to_map,
)
from smq_lambda.adapters.attribute_values import (
    Item,
    bounded_text,
    format_time,
    optional_n,
    optional_outcome,
    optional_s,
    optional_time,
    parse_time,
)
from smq_lambda.domain.jobs.model import Job, order_key
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import TERMINAL_STATES, JobState
from smq_lambda.domain.placements.purchase import Purchase

ARCHIVE_SEPARATOR = "#"
_INDEX_ATTRIBUTES = ("order_key", "owner_state", "pending_pool", "pending_team")
IMMUTABLE_ATTRIBUTES = frozenset({"name", "job_id", "submitted_at", "owner", "demand", "pool"})
"""Set by `create` and never changed: a save updates every other attribute (the request, up to
256 KB, only when it changed: see DynamoJobStore.save)."""
OPTIONAL_ATTRIBUTES = (
    "earlier_attempts",
    "earlier_outcomes",
    "history",
    "earlier_job_ids",
    "updated_at",
    "reason",
    "not_before",
    "stop_outcome",
    "team",
    "family",
    "budget_override",
    "purchase",
    "warm_key",
    "placements",
    "expected_duration_s",
    "max_runtime_s",
    "pending_pool",
    "pending_team",
    "expires_at",
    "attempt_end_day",
    "attempt_end",
)
"""Attributes an item has only when they have a value: a save removes the ones its job lacks."""


def expires_at(job: Job, ttl_days: int) -> int | None:
    """Epoch seconds at which DynamoDB may delete a finished job; None while it is not finished.

    Counted from the job's last write (the one that finished it), so the history stays readable
    for `ttl_days` after the job ended whatever the store's own clock says.
    """
    if job.state not in TERMINAL_STATES:
        return None
    finished = job.updated_at or job.submitted_at
    if finished.tzinfo is None:
        finished = finished.replace(tzinfo=UTC)
    return int((finished + timedelta(days=ttl_days)).timestamp())


def job_order_key(job: Job) -> str:
    return order_key(job.priority, job.submitted_at, job.name)


def to_item(job: Job, *, ttl_days: int) -> Item:
    listed = job.where.listed
    item: Item = {
        "name": {"S": job.name},
        "job_id": {"S": job.job_id},
        "state": {"S": str(job.state)},
        "priority": {"N": str(job.priority)},
        "submitted_at": {"S": format_time(job.submitted_at)},
        "demand": {"M": {pool: {"N": str(count)} for pool, count in listed.items()}},
        "pool": {"S": next(iter(listed))},
        "owner": {"S": job.owner},
        "version": {"N": str(job.version)},
        "attempts": {"L": [{"M": attempt_to_map(attempt)} for attempt in job.attempts]},
        "start_failures": {"N": str(job.start_failures)},
        "request": {"S": json.dumps(job.request, separators=(",", ":"))},
        "order_key": {"S": job_order_key(job)},
        "owner_state": {"S": owner_state_key(job.owner, job.state)},
    }
    if job.earlier_attempts:
        item["earlier_attempts"] = {"N": str(job.earlier_attempts)}
    if job.earlier_outcomes:
        item["earlier_outcomes"] = {"M": {str(key): {"N": str(count)} for key, count in job.earlier_outcomes.items()}}
    if job.history:
        item["history"] = {"L": [{"M": change_to_map(change)} for change in job.history]}
    if job.earlier_job_ids:
        item["earlier_job_ids"] = {"L": [{"S": job_id} for job_id in job.earlier_job_ids]}
    if job.updated_at is not None:
        item["updated_at"] = {"S": format_time(job.updated_at)}
    if job.reason is not None:
        item["reason"] = {"S": bounded_text(job.reason)}
    if job.not_before is not None:
        item["not_before"] = {"S": format_time(job.not_before)}
    if job.stop_outcome is not None:
        item["stop_outcome"] = {"S": str(job.stop_outcome)}
    if job.team is not None:
        item["team"] = {"S": job.team}
    if job.family is not None:
        item["family"] = {"S": job.family}
    if job.budget_override:
        item["budget_override"] = {"BOOL": True}
    if job.purchase is not Purchase.ON_DEMAND:
        item["purchase"] = {"S": str(job.purchase)}
    if job.warm_key is not None:
        item["warm_key"] = {"S": job.warm_key}
    if job.placements:
        item["placements"] = {"L": [{"M": placement_to_map(placement)} for placement in job.placements]}
    if job.expected_duration_s is not None:
        item["expected_duration_s"] = {"N": str(job.expected_duration_s)}
    if job.max_runtime_s is not None:
        item["max_runtime_s"] = {"N": str(job.max_runtime_s)}
    if job.state is JobState.PENDING:
        item["pending_pool"] = {"S": job.where.pool}
        item["pending_team"] = {"S": pending_team_key(job.where.pool, job.team)}
    expiry = expires_at(job, ttl_days)
    if expiry is not None:
        item["expires_at"] = {"N": str(expiry)}
    last_end = max((attempt.ended_at for attempt in job.attempts if attempt.ended_at is not None), default=None)
    if last_end is not None:
        item["attempt_end_day"] = {"S": attempt_end_day(last_end)}
        item["attempt_end"] = {"S": format_time(last_end)}
    return item


def attempt_end_day(value: datetime) -> str:
    """The `by-attempt-end` partition of an attempt that ended at `value`: its UTC day."""
    return format_time(value)[:10]


def from_item(item: Mapping[str, Mapping[str, Any]]) -> Job:
    """The job an item holds, current or archived (an archived item's key carries its job id).

    An item of the pending index holds only the attributes template.yaml projects into it: its job
    has no request and no history. Such a summary is decided over, never written back (the
    scheduler reads the whole item by key before it writes).
    """
    state = JobState(item["state"]["S"])
    attempts = tuple(attempt_from_map(entry["M"]) for entry in item["attempts"]["L"])
    placed = attempts[-1].placement if attempts and state is not JobState.PENDING else None
    return Job(
        name=item["name"]["S"].partition(ARCHIVE_SEPARATOR)[0],
        job_id=item["job_id"]["S"],
        state=state,
        priority=int(item["priority"]["N"]),
        submitted_at=parse_time(item["submitted_at"]["S"]),
        demand=_demand_from_item(item) if placed is None else placed.demand,
        owner=item["owner"]["S"],
        version=int(item["version"]["N"]),
        attempts=attempts,
        reason=optional_s(item, "reason"),
        not_before=optional_time(item, "not_before"),
        start_failures=int(item["start_failures"]["N"]),
        updated_at=optional_time(item, "updated_at"),
        request=json.loads(item["request"]["S"]) if "request" in item else {},
        earlier_attempts=int(item.get("earlier_attempts", {"N": "0"})["N"]),
        earlier_outcomes={
            AttemptOutcome(key): int(value["N"]) for key, value in item.get("earlier_outcomes", {"M": {}})["M"].items()
        },
        history=tuple(change_from_map(entry["M"]) for entry in item.get("history", {"L": []})["L"]),
        earlier_job_ids=tuple(entry["S"] for entry in item.get("earlier_job_ids", {"L": []})["L"]),
        stop_outcome=optional_outcome(item, "stop_outcome"),
        team=optional_s(item, "team"),
        family=optional_s(item, "family"),
        budget_override=item.get("budget_override", {}).get("BOOL", False),
        purchase=Purchase(optional_s(item, "purchase") or Purchase.ON_DEMAND),
        warm_key=optional_s(item, "warm_key"),
        placements=tuple(placement_from_map(entry["M"]) for entry in item.get("placements", {"L": []})["L"]),
        expected_duration_s=optional_n(item, "expected_duration_s"),
        max_runtime_s=optional_n(item, "max_runtime_s"),
    )


def pending_team_key(pool: str, team: str | None) -> str:
    """The `pending-by-team` partition of a pending job of `team` in `pool` ("" or None: no team).
    Pools never contain '#', so the key is unambiguous whatever the team's value."""
    return f"{pool}{ARCHIVE_SEPARATOR}{team or ''}"


def owner_state_key(owner: str, state: JobState) -> str:
    """The `by-owner` partition of `owner`'s jobs in `state`; states never contain '#', so the key
    is unambiguous whatever the owner's text."""
    return f"{owner}{ARCHIVE_SEPARATOR}{state}"


def archive_key(name: str, job_id: str) -> str:
    """Where an earlier job of a reused name stays readable until its TTL."""
    return f"{name}{ARCHIVE_SEPARATOR}{job_id}"


def archived(item: Mapping[str, Mapping[str, Any]]) -> Item:
    """A finished job's item as kept once its name is reused: same attributes under its archive
    key, out of every index (no `order_key`, `owner_state`, `pending_pool` or `pending_team`),
    expiring when it would have."""
    copy = {key: dict(value) for key, value in item.items() if key not in _INDEX_ATTRIBUTES}
    copy["name"] = {"S": archive_key(item["name"]["S"], item["job_id"]["S"])}
    return copy


def _demand_from_item(item: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """DynamoDB maps keep no order, but `Job.where.pool` is the first key: put the `pool` attribute first."""
    counts = {pool: int(value["N"]) for pool, value in item["demand"]["M"].items()}
    first = item["pool"]["S"]
    return {first: counts[first], **{pool: count for pool, count in sorted(counts.items()) if pool != first}}
