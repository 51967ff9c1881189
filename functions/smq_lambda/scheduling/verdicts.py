"""One verdict per job at one placement: what the pass could do for it now, asked without deciding
anything and without touching the ledger. The placement phase ranks a flexible job's placements by
their verdicts; warm reuse starts a job whose verdict is `FitOnWarm`; backfill starts a job whose
verdict is `Behind` with `starts`. The phases that decide then apply the verdict (admit, borrow,
make room, wait).

In the order they are given (the first that holds):

* `Behind(head, starts)`: an earlier job of its team waits for one of its pools (`head`, of the
  first such pool); `starts` when the instances its team may use cover it now, within its quota
  or as borrowing the borrowing rules allow (what backfill may start);
* `FitOnWarm(warm)`: a warm pool it matches (same key, one pool, same count) with the instances its
  team may use covers it within its quota (`warm_pools`, rule 1);
* `Fit`: the instances its team may use cover it within its quota;
* `Borrow`: they cover it beyond its quota, and the borrowing rules allow it;
* `MakeRoom(targets, reclaim)`: the stops in flight, the warm pools it would end (those it does not
  match), the reclaim of borrowed capacity or priority preemption inside its team cover what it
  lacks; `targets`, the jobs the reclaim (`reclaim`) or preemption would stop (none when the rest
  cover it). The nomination phase stops exactly these: they are selected once;
* `NoFit`: none of these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.warm.warm_pools import WarmPool
from smq_lambda.scheduling import room
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.preemption import select_targets


@dataclass(frozen=True)
class Behind:
    head: Candidate
    starts: bool


@dataclass(frozen=True)
class FitOnWarm:
    warm: WarmPool


@dataclass(frozen=True)
class Fit:
    pass


@dataclass(frozen=True)
class Borrow:
    pass


@dataclass(frozen=True)
class MakeRoom:
    targets: Sequence[Job]
    reclaim: bool = False
    """The targets run on capacity their teams borrowed and are reclaimed; else they are stopped by
    the priority rule inside the job's team."""


@dataclass(frozen=True)
class NoFit:
    pass


Verdict = Behind | FitOnWarm | Fit | Borrow | MakeRoom | NoFit
VerdictNow = Behind | FitOnWarm | Fit | Borrow
"""The verdicts `assess_now` gives without looking for room."""
FITS_NOW = (FitOnWarm, Fit, Borrow)
"""The verdicts of a job that starts now."""


def assess(state: PassState, at: Candidate) -> Verdict:
    """The verdict on `at`, a job at one placement (`Candidate`)."""
    return assess_now(state, at) or room_for(state, at)


def assess_now(state: PassState, at: Candidate) -> VerdictNow | None:
    """The verdicts that need no victim selection; None when `at` would need room made. The
    placement phase asks this of every option first, and `room_for` only when none fits now."""
    team = state.ledger.team(at)
    if (head := behind(state, at)) is not None:
        return head
    if (warm := on_warm(state, at)) is not None:
        return warm
    if not room.lack(state, at):
        beyond = state.ledger.beyond_quota(team, at.demand)
        if not beyond:
            return Fit()
        if room.why_not_borrow(state, at, beyond) is None:
            return Borrow()
    return None


def behind(state: PassState, at: Candidate) -> Behind | None:
    """`Behind` when an earlier job of its team waits for one of `at`'s pools, else None."""
    if blocked := state.blocked(at):
        return Behind(state.team_heads[state.ledger.team(at)][blocked[0]], _fits_now(state, at))
    return None


def on_warm(state: PassState, at: Candidate) -> FitOnWarm | None:
    """`FitOnWarm` when no earlier job of its team waits for the pool and a warm pool `at` matches,
    with the instances its team may use, covers it within its quota; else None."""
    if at.warm_key is None or state.blocked(at):
        return None
    warm = state.warm.matching(at.warm_key, at.demand)
    if (
        warm is None
        or room.lack(state, at, also=warm.demand)
        or state.ledger.beyond_quota(state.ledger.team(at), at.demand)
    ):
        return None
    return FitOnWarm(warm)


def room_for(state: PassState, at: Candidate, *, ending_warm: bool = True) -> MakeRoom | NoFit:
    """`MakeRoom` with the jobs stopped for `at` when room can be made for it, else `NoFit`.
    `ending_warm`: the warm pools it does not match count as room (the walk ends them for a head
    within its quota before anything is stopped: `warm_supply.release_for`)."""
    lacks = {
        pool: left
        for pool, missing in room.lack(state, at, counting_releasing=True).items()
        if (left := missing - (state.warm.endable(at.warm_key, pool) if ending_warm else 0)) > 0
    }
    if not lacks:
        return MakeRoom(())
    reclaimed = room.reclaim_targets(state, state.ledger.team(at), lacks)
    if reclaimed is not None:
        return MakeRoom(reclaimed, reclaim=True)
    candidates, _ = room.priority_candidates(state, at)
    targets = select_targets(lacks, candidates)
    return NoFit() if targets is None else MakeRoom(targets)


def _fits_now(state: PassState, at: Candidate) -> bool:
    """The instances `at`'s team may use cover it now, within its quota or as borrowing."""
    beyond = state.ledger.beyond_quota(state.ledger.team(at), at.demand)
    return not room.lack(state, at) and (not beyond or room.why_not_borrow(state, at, beyond) is None)
