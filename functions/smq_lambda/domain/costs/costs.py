"""What training costs, in US dollars: the price of an instance-hour, what an ended attempt spent,
what a job is expected to cost, and what a running one has accrued. Pure.

SageMaker bills a training job `BillableTimeInSeconds` per instance at the on-demand rate of its
instance type; for managed spot training that time is already reduced by the spot saving, so spot
needs no second price: the saving is the training time it did not bill (`TrainingTimeInSeconds` -
`BillableTimeInSeconds`), priced. A type with no price is *unpriced*: every figure of a job that
uses one is None, never $0, so nothing unpriced ever looks free.

Waste is spend that bought nothing: the training an attempt's job must redo after the attempt was
preempted, stopped for its training plan's window, interrupted or moved (it resumes from its last checkpoint, which the queue cannot see:
without a `CheckpointConfig` the whole attempt is redone, with one at most REDONE_WITH_CHECKPOINTS_S
per instance), and the idle time before an idle stop. What an idle stop avoided is the rest of the
attempt's `MaxRuntimeInSeconds` it cut, priced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.placements.placement import Placement

SECONDS_PER_HOUR = 3600
REDONE_WITH_CHECKPOINTS_S = 300
"""Training a job that checkpoints is assumed to redo after it was stopped: the queue does not see
its checkpoints, and SageMaker's guidance (and the reference trainer) checkpoint every few minutes."""
RESUMED_OUTCOMES = frozenset(
    {
        AttemptOutcome.PREEMPTED,
        AttemptOutcome.PLAN_WINDOW_CLOSED,
        AttemptOutcome.SPOT_FALLBACK,
        AttemptOutcome.INFRASTRUCTURE_FAILURE,
        AttemptOutcome.MAX_WAIT_TIME_EXCEEDED,
    }
)
"""Endings after which the job waits again and redoes the training since its last checkpoint."""
SAGEMAKER_DEFAULT_MAX_RUNTIME_S = 86_400
"""SageMaker stops a training job after a day when its request names no MaxRuntimeInSeconds."""

Prices = Mapping[str, float]
"""On-demand US dollars per instance-hour, by instance type."""


def hourly_rate(demand: Mapping[str, int], prices: Prices) -> float | None:
    """Dollars per hour for `demand` (instances per type); None when any type is unpriced."""
    total = 0.0
    for instance_type, count in demand.items():
        price = prices.get(instance_type)
        if price is None:
            return None
        total += price * count
    return total


def is_spot(job: Job, attempt: Attempt | None = None) -> bool:
    """Whether `attempt` (by default the job's current one) runs on managed spot: its placement says
    so for a flexible job, the request for a pinned one."""
    attempt = attempt if attempt is not None else job.current_attempt
    if attempt is not None and attempt.placement is not None:
        return attempt.placement.spot
    return job.request.get("EnableManagedSpotTraining") is True


def attempt_instances(job: Job, attempt: Attempt) -> Mapping[str, int]:
    """Instances per instance type `attempt` ran on: its placement's, else the job's."""
    placement = attempt.placement
    return {placement.instance_type: placement.count} if placement is not None else job.where.instance_types


@dataclass(frozen=True)
class AttemptCost:
    """The priced end of one attempt. Every figure is None when the job uses an unpriced type."""

    training_job_name: str
    ended_at: datetime
    spot: bool
    billable_s: int
    training_s: int
    spend_usd: float | None
    on_demand_equivalent_usd: float | None
    spot_savings_usd: float | None
    waste_usd: float | None
    idle_stop_avoided_usd: float | None


def attempt_cost(
    job: Job,
    attempt: Attempt,
    *,
    billable_s: int | None,
    training_s: int | None,
    ended_at: datetime,
    prices: Prices,
    idle_window_s: int = 0,
) -> AttemptCost:
    """What `attempt` of `job` cost, from SageMaker's final times. Missing times (a training job that
    never trained) count as zero; a billable time above the training time (on-demand billing
    includes nothing else) is taken as reported. `idle_window_s`: how long the GPUs sat idle before
    an idle stop (the idle rule's window), counted as waste for an attempt that ended so."""
    billed = max(billable_s or 0, 0)
    spot = is_spot(job, attempt)
    trained = max(training_s or 0, billed if not spot else 0)
    rate = hourly_rate(attempt_instances(job, attempt), prices)
    if rate is None:
        return AttemptCost(attempt.training_job_name, ended_at, spot, billed, trained, *([None] * 5))
    per_second = rate / SECONDS_PER_HOUR
    spend = billed * per_second
    on_demand = max(trained, billed) * per_second
    return AttemptCost(
        training_job_name=attempt.training_job_name,
        ended_at=ended_at,
        spot=spot,
        billable_s=billed,
        training_s=trained,
        spend_usd=spend,
        on_demand_equivalent_usd=on_demand,
        spot_savings_usd=on_demand - spend,
        waste_usd=min(_wasted_seconds(job, attempt, trained, idle_window_s) * per_second, spend),
        idle_stop_avoided_usd=_idle_stop_avoided_s(job, attempt, trained) * per_second,
    )


def _wasted_seconds(job: Job, attempt: Attempt, trained: int, idle_window_s: int) -> int:
    if attempt.outcome in RESUMED_OUTCOMES:
        return trained if job.request.get("CheckpointConfig") is None else min(trained, REDONE_WITH_CHECKPOINTS_S)
    if attempt.outcome is AttemptOutcome.IDLE_GPU:
        return min(trained, max(idle_window_s, 0))
    return 0


def _idle_stop_avoided_s(job: Job, attempt: Attempt, trained: int) -> int:
    if attempt.outcome is not AttemptOutcome.IDLE_GPU or job.max_runtime_s is None:
        return 0
    return max(job.max_runtime_s - trained, 0)


@dataclass(frozen=True)
class CostEstimate:
    """What a job is expected to cost: `usd` for `seconds` of training at `usd_per_hour`. `ceiling`:
    the seconds are its MaxRuntimeInSeconds (no expected duration), so the cost is at most `usd`."""

    usd: float
    usd_per_hour: float
    seconds: int
    ceiling: bool


def estimated_cost(
    job: Job, prices: Prices, *, expected_s: int | None = None, at: Placement | None = None
) -> CostEstimate | None:
    """The job's expected cost: its expected duration (`expected_s` when the caller knows better,
    else the `smq:expected-duration` tag), else its MaxRuntimeInSeconds (SageMaker's default of a
    day when the request names none) as a ceiling, times its instances' hourly rate: at placement
    `at` when given (the one a pass chose), else where it runs or is listed. None when unpriced."""
    rate = hourly_rate(job.where.instance_types if at is None else {at.instance_type: at.count}, prices)
    seconds = expected_s if expected_s is not None else job.expected_duration_s
    ceiling = seconds is None
    if seconds is None:
        seconds = job.max_runtime_s if job.max_runtime_s is not None else SAGEMAKER_DEFAULT_MAX_RUNTIME_S
    if rate is None:
        return None
    return CostEstimate(usd=rate * seconds / SECONDS_PER_HOUR, usd_per_hour=rate, seconds=seconds, ceiling=ceiling)


def accrued_cost(job: Job, now: datetime, prices: Prices) -> float | None:
    """What the job's open attempt has cost so far, billed on demand from its start (an estimate:
    spot bills less, and SageMaker bills from its own start, a little after the queue's). Zero
    without an open attempt; None when unpriced."""
    rate = hourly_rate(job.where.instance_types, prices)
    if rate is None:
        return None
    attempt = job.current_attempt
    if attempt is None or not attempt.is_open:
        return 0.0
    seconds = max((now - attempt.started_at).total_seconds(), 0.0)
    return rate * seconds / SECONDS_PER_HOUR
