"""The API's JSON shapes (openapi.yaml, components/schemas), built from domain values.

Kept apart from the handler so the shapes are defined once and can be checked against the OpenAPI
document without routing anything.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from smq_lambda.domain.costs.costs import CostEstimate
from smq_lambda.domain.jobs.model import Attempt, Change
from smq_lambda.domain.placements.purchase import SPOT_POOL_SUFFIX
from smq_lambda.service.job_positions import PositionedJob
from smq_lambda.service.queue_api import CurrentPools, PositionedPage
from smq_lambda.service.quotas import CurrentQuotas

USD_DIGITS = 6
RATE_DIGITS = 4
"""Dollars are sent to the millionth: cents would round a short job's cost away."""


def timestamp(value: datetime | None) -> str | None:
    """ISO 8601 UTC with a `Z` (naive datetimes are taken as UTC), to the millisecond."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def attempt_view(attempt: Attempt) -> dict[str, Any]:
    placement = attempt.placement
    return {
        "number": attempt.number,
        "training_job_name": attempt.training_job_name,
        "started_at": timestamp(attempt.started_at),
        "ended_at": timestamp(attempt.ended_at),
        "outcome": None if attempt.outcome is None else str(attempt.outcome),
        "reason": attempt.reason,
        "instance_type": None if placement is None else placement.instance_type,
        "instance_count": None if placement is None else placement.count,
        "keep_alive_s": attempt.keep_alive_s,
    }


def change_view(change: Change) -> dict[str, Any]:
    return {"at": timestamp(change.at), "by": change.by, "what": change.what}


def job_view(entry: PositionedJob, *, with_request: bool = False) -> dict[str, Any]:
    """With `with_request`, also the CreateTrainingJob request as stored: what the queue sends to
    SageMaker (up to 256 KB, so only GET /jobs/{name}?include=request carries it)."""
    job = entry.job
    attempt = job.current_attempt
    selected = job.where.selected
    view: dict[str, Any] = {
        "name": job.name,
        "job_id": job.job_id,
        "state": str(job.state),
        "priority": job.priority,
        "pool": job.where.pool,
        "instances": job.where.instances,
        "demand": dict(job.demand),
        "owner": job.owner,
        "team": job.team,
        "submitted_at": timestamp(job.submitted_at),
        "updated_at": timestamp(job.updated_at or job.submitted_at),
        "reason": entry.reason,
        "position": entry.position,
        "training_job_name": attempt.training_job_name if attempt is not None else None,
        "attempts": [attempt_view(item) for item in job.attempts],
        "attempt_count": job.attempt_count,
        "attempt_outcomes": {str(outcome): count for outcome, count in job.attempt_outcomes.items()},
        "history": [change_view(change) for change in job.history],
        "earlier_job_ids": list(job.earlier_job_ids),
        "instance_preferences": [
            {"instance_type": placement.instance_type, "count": placement.count} for placement in job.placements
        ],
        "selected_instance_type": None if selected is None else selected.instance_type,
        "selected_instance_count": None if selected is None else selected.count,
    }
    estimate = entry.estimated_start
    if estimate is not None:
        view["estimated_start"] = {
            "at": timestamp(estimate.at),
            "earliest": timestamp(estimate.earliest),
            "latest": timestamp(estimate.latest),
            "kind": str(estimate.kind),
            "assumed": estimate.assumed,
            "computed_at": timestamp(estimate.computed_at),
        }
    if entry.estimate_at_next_pass:
        view["estimate_at_next_pass"] = True
    view["estimated_cost"] = cost_estimate_view(entry.estimated_cost)
    if with_request:
        view["request"] = dict(job.request)
    return view


def cost_estimate_view(estimate: CostEstimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {
        "usd": round(estimate.usd, USD_DIGITS),
        "usd_per_hour": round(estimate.usd_per_hour, USD_DIGITS),
        "seconds": estimate.seconds,
        "ceiling": estimate.ceiling,
    }


def page_view(page: PositionedPage) -> dict[str, Any]:
    return {"jobs": [job_view(entry) for entry in page.jobs], "next_token": page.next_token}


def pools_view(current: CurrentPools) -> dict[str, Any]:
    return {
        "pools": [
            {
                "pool": usage.pool,
                "capacity": usage.capacity,
                "in_use": usage.in_use,
                "warm": usage.warm,
                "pending": usage.pending,
                "head": usage.head,
                **_spot_rate(current, usage.pool),
            }
            for usage in current.pools
        ],
        "measured_at": timestamp(current.measured_at),
    }


def _spot_rate(current: CurrentPools, pool: str) -> dict[str, float]:
    """The spot interruption rate of the pool's instance type, on its rows (spot and on demand) and
    only where adaptive spot measured one."""
    rate = current.spot_rates.get(pool.removesuffix(SPOT_POOL_SUFFIX))
    return {} if rate is None else {"spot_interruptions_per_hour": round(rate, RATE_DIGITS)}


def quotas_view(current: CurrentQuotas) -> dict[str, Any]:
    return {
        "teams": [
            {
                "team": row.measure.team,
                "pool": row.measure.pool,
                "quota": row.measure.quota,
                "in_use": row.measure.in_use,
                "borrowed": row.measure.borrowed,
                "lent": row.measure.lent,
                "pending": row.measure.pending,
                "sharing": str(row.sharing),
                "borrow_limit": row.borrow_limit,
            }
            for row in current.teams
        ],
        "team_tag": current.team_tag,
        "measured_at": timestamp(current.measured_at),
    }


def error_view(field: str | None, message: str) -> dict[str, Any]:
    return {"message": message, "field": field}
