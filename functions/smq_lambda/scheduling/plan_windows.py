"""Training plan windows, in the one place a pass learns the time: the configuration *in force* at
`now`. A plan's pool (domain/config/plan_document.py) holds its instances while one of its windows is
open, from the window's start to its stop margin before its end, and none otherwise. So the ledger,
the skip rule, the windows of the pending index and GET /pools need nothing else: outside a window a
plan's pool is a pool of 0, a job waiting for it alone is set aside (it blocks nothing), and the
jobs still running there are stopped (scheduling/plan_stops.py).

Only its reason differs: a job waiting for a closed plan is told when the next window opens
("training plan p5-reserved: next window opens 2026-12-01T00:00:00Z"), never that the pool has 0.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from smq_lambda.domain.config.config_document import QueueConfigDocument
from smq_lambda.domain.config.plan_document import TrainingPlan
from smq_lambda.scheduling import reasons
from smq_lambda.scheduling.reasons import PoolView

Config = TypeVar("Config", bound=QueueConfigDocument)


def in_force(config: Config, now: datetime) -> Config:
    """`config` with each plan's pool holding its instances if a window is open at `now`, else 0.
    Idempotent: it reads the plans, never the pools it sets."""
    if not config.training_plans:
        return config
    pools = dict(config.pools)
    for plan in config.training_plans.values():
        pools[plan.pool] = plan.instances if plan.open_window(now) is not None else 0
    return replace(config, pools=pools)


def plan_of(config: QueueConfigDocument, pool: str) -> TrainingPlan | None:
    """The training plan whose pool `pool` is."""
    return next((plan for plan in config.training_plans.values() if plan.pool == pool), None)


def never_fits(config: QueueConfigDocument, now: datetime, view: PoolView, *, configured: bool) -> str:
    """Why a job needing `view.need` of `view.pool` cannot start whatever the others do: a closed
    plan's next window when the plan holds enough in a window, else `reasons.never_fits`."""
    return closed_for(config, now, view) or reasons.never_fits(view, configured=configured)


def closed_for(config: QueueConfigDocument, now: datetime, view: PoolView) -> str | None:
    """A closed plan's next window, when `view.pool` is a plan's pool, closed at `now`, that holds
    `view.need` in a window; None otherwise."""
    plan = plan_of(config, view.pool)
    if plan is not None and view.need <= plan.instances and plan.open_window(now) is None:
        return closed(plan, now)
    return None


def closed(plan: TrainingPlan, now: datetime) -> str:
    opening = plan.next_opening(now)
    if opening is not None:
        return f"training plan {plan.name}: next window opens {reasons.timestamp(opening)}"
    last = plan.windows[-1]
    return (
        f"training plan {plan.name}: no window opens after {reasons.timestamp(now)} (its last closed at "
        f"{reasons.timestamp(plan.closes(last))}, {_span(plan.stop_margin_s)} before its end)"
    )


def window_end(plan: TrainingPlan, now: datetime) -> str:
    """Why a job running in `plan`'s pool is stopped at `now`."""
    ended = [window for window in plan.windows if plan.closes(window) <= now < window.end]
    if not ended:
        return f"{closed(plan, now)}; stopped so it checkpoints"
    return (
        f"training plan {plan.name}'s window ends at {reasons.timestamp(ended[0].end)}; stopped "
        f"{_span(plan.stop_margin_s)} before so it checkpoints"
    )


def boundaries(config: QueueConfigDocument, after: datetime) -> list[datetime]:
    """Every moment after `after` a plan's pool opens or closes: a pass there may decide otherwise."""
    return sorted({moment for plan in config.training_plans.values() for moment in plan.boundaries() if moment > after})


def _span(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"
