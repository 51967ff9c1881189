"""The gates of a pass: rules that set a pending job aside whatever the other jobs do. A job a gate
holds is explained (its reason rendered from the gate's kind) and blocks nothing; the pass decides
it again at the next pass, where a backoff ends, a plan window opens, a budget resets or a quota
grows.

The gates, in the order they are asked (the first that holds the job names it):

1. **too large** (`HoldKind.TOO_LARGE`): it needs more of a pool than the pool holds even when
   empty; a training plan's pool outside its windows is its own kind
   (`HoldKind.PLAN_WINDOW_CLOSED`), whose reason names the next window;
2. **backoff** (`HoldKind.BACKOFF`): a start was refused, and the job may try again later;
3. **beyond reach** (`HoldKind.BEYOND_REACH`): it needs more than its team may ever hold there
   (`Teams.reach`: its quota and what it may borrow);
4. **the features' gates** (scheduling/features.py): a hold budget that does not cover it
   (`HoldKind.BUDGET`, `budget_hold`).

A flexible job is too large, or in backoff, only as a whole (`skips.skip_rule`); gates 1, 3 and 4
are asked of each of its placements by the placement phase (`placement_gate`), which holds it when
none passes. The kinds and what a hold says are in holds.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.scheduling import plan_windows, quota_reasons, reasons, room
from smq_lambda.scheduling.holds import Held, HoldKind
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.skips import InBackoff, TooLarge, skip_rule


def set_aside(state: PassState, job: Job) -> bool:
    """Explain and set `job` aside when a gate holds it (a flexible job's placements: see
    `placement_gate`)."""
    held = gate(state, job)
    if held is not None:
        hold(state, job, held)
    return held is not None


def hold(state: PassState, job: Job, held: Held) -> None:
    """Explain `job` by `held` and set it aside: it heads no pool."""
    state.hold(job, held)


def gate(state: PassState, job: Job) -> Held | None:
    """The first gate that holds `job`, or None. Gate 3 and the features' only for a pinned job."""
    match skip_rule(job, state.now, state.ledger.capacity):
        case TooLarge(pool):
            need = next((p.count for p in job.placements if p.pool_name == pool), None) or job.demand[pool]
            return too_large(state, pool, need)
        case InBackoff(until):
            return Held(HoldKind.BACKOFF, reasons.backoff(until, _refusal(job)))
    if job.placements:
        return None
    return beyond_reach(state, job, job.demand) or state.feature_gate(job, job.own_placement)


def placement_gate(state: PassState, job: Job, placement: Placement) -> Held | None:
    """The first gate that holds `job` at `placement` (one of its preferences), or None."""
    capacity = state.ledger.capacity(placement.pool_name)
    if capacity is not None and placement.count > capacity:
        return too_large(state, placement.pool_name, placement.count)
    return beyond_reach(state, job, placement.demand) or state.feature_gate(job, placement)


def too_large(state: PassState, pool: str, need: int) -> Held:
    """`need` of `pool` is more than the pool holds now: a closed plan's window, or too large."""
    view = room.view(state, pool, need)
    closed = plan_windows.closed_for(state.config, state.now, view)
    if closed is not None:
        return Held(HoldKind.PLAN_WINDOW_CLOSED, closed)
    return Held(HoldKind.TOO_LARGE, reasons.never_fits(view, configured=pool in state.config.pools))


def beyond_reach(state: PassState, job: Job, demand: Mapping[str, int]) -> Held | None:
    """`demand` is more than `job`'s team may ever hold in one of its pools. Without quotas the
    unassigned group's reach is the whole pool, which gate 1 checked."""
    team = state.ledger.team(job)
    for pool, need in demand.items():
        reach = state.config.teams.reach(team, pool, state.config.capacity(pool))
        if reach is not None and need > reach:
            return Held(HoldKind.BEYOND_REACH, quota_reasons.beyond_reach(team, pool, need, reach))
    return None


def _refusal(job: Job) -> str | None:
    """Why the last start was refused, kept in the backoff reason so the cause stays visible."""
    attempt = job.current_attempt
    return attempt.reason if attempt is not None and attempt.outcome == AttemptOutcome.REFUSED else None
