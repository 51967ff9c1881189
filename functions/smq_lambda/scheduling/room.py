"""The capacity questions the verdicts and the phases ask of a job, without deciding anything: what
it lacks, whether it may borrow, which running jobs the priority rule or a reclaim lets it stop,
and the pools as its reasons show them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from smq_lambda.domain.jobs.model import Job
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.pass_state import PassState, limited
from smq_lambda.scheduling.preemption import (
    RECLAIMABLE_STATES,
    is_reclaimable_by,
    least_progress_first,
    select_targets,
)
from smq_lambda.scheduling.reasons import PoolView


def lack(
    state: PassState, job: Candidate, *, counting_releasing: bool = False, also: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Per pool short of it, instances `job` lacks beyond those its team may use (`Ledger.available`),
    beyond those on their way back when `counting_releasing`, and beyond `also` (instances that
    would be its alone: a warm pool it matches)."""
    ledger = state.ledger
    team = ledger.team(job)
    missing_by_pool = {}
    for pool, need in job.demand.items():
        available = ledger.available(team, pool)
        if available is None:
            continue
        available += (also or {}).get(pool, 0)
        releasing = ledger.releasing(pool) if counting_releasing else 0
        if (missing := need - available - releasing) > 0:
            missing_by_pool[pool] = missing
    return missing_by_pool


def pool_lack(state: PassState, job: Candidate) -> dict[str, int]:
    """Instances per pool `job` still lacks once the stops in flight land, whatever its team."""
    return {
        pool: missing
        for pool, count in job.demand.items()
        if (missing := state.ledger.lack(pool, count, counting_releasing=True)) > 0
    }


def why_not_borrow(state: PassState, job: Candidate, beyond: Mapping[str, int]) -> str | None:
    """The borrowing rule (the borrowing and backfill phases): why `job`, `beyond` its team's quota,
    may not borrow; None when it may (its team borrows, within its borrow limit, and the instances
    its team may use cover it)."""
    ledger = state.ledger
    team = ledger.team(job)
    sharing = state.config.teams.sharing(team)
    if not sharing.borrows:
        return f"its sharing is {sharing.value}"
    limit = state.config.teams.borrow_limit(team)
    if limit is not None:
        for pool, over in beyond.items():
            if over > limit:
                return f"it would borrow {over} of {pool}, its borrow limit is {limit}"
    for pool, need in job.demand.items():
        free, available = ledger.free(pool), ledger.available(team, pool)
        if free is None or available is None:
            continue
        if need > available:
            reserved = free - available
            kept = f", {reserved} of them idle quota that other teams reserve" if reserved else ""
            return f"{max(free, 0)} {pool} free{kept}"
    return None


def priority_candidates(state: PassState, head: Candidate) -> tuple[list[Job], int]:
    """Live jobs of `head`'s team that the priority rule lets it stop, and how many more would be
    but are protected (see `preemption.protection`). Without quotas the team is the unassigned
    group: every live job of the queue."""
    candidates, protected = [], 0
    for other in state.live_of_team(state.ledger.team(head)):
        if not is_reclaimable_by(other, head):
            continue
        if not other.is_backfill and state.protected(other):
            protected += 1
        else:
            candidates.append(other)
    return candidates, protected


def whole(state: PassState, job: Candidate) -> bool:
    """`job`'s team holds every pool it needs whole (`Ledger.whole`): its reasons name no quota."""
    team = state.ledger.team(job)
    return all(state.ledger.whole(team, pool) for pool in limited(job.demand, state.ledger))


def view(state: PassState, pool: str, need: int) -> PoolView:
    ledger = state.ledger
    return PoolView(pool, need, ledger.free(pool), ledger.capacity(pool), ledger.releasing(pool))


def views(state: PassState, demand: Mapping[str, int]) -> list[PoolView]:
    return [view(state, pool, count) for pool, count in demand.items()]


def short_views(state: PassState, demand: Mapping[str, int]) -> list[PoolView]:
    """The pools of `demand` without the instances free right now."""
    return [view(state, pool, count) for pool, count in demand.items() if not state.ledger.fits({pool: count})]


def reclaim_targets(state: PassState, team: str, lacks: Mapping[str, int]) -> Sequence[Job] | None:
    """The jobs of other teams running on borrowed capacity that `team` reclaims to cover
    `lacks`; None when they cannot cover it."""
    ledger = state.ledger

    def still_borrowing(job: Job, chosen: Sequence[Job]) -> bool:
        owner = ledger.team(job)
        return any(
            job.demand.get(pool, 0)
            and ledger.borrowing(owner, pool) - sum(c.demand.get(pool, 0) for c in chosen if ledger.team(c) == owner)
            > 0
            for pool in lacks
        )

    candidates = [
        job
        for job in state.live.values()
        if job.state in RECLAIMABLE_STATES and job.current_attempt is not None and ledger.team(job) != team
    ]
    return select_targets(lacks, candidates, order=least_progress_first, eligible=still_borrowing)
