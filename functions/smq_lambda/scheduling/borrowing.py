"""The borrowing phase of a pass: borrow, then priority inside a team.

The first job of each team that would exceed its quota is decided here. Where another team lends
idle quota in its pools it is decided after every job within a quota, teams taken in fair-share
order: the smallest decayed usage per instance of quota first (Kueue's admission fair sharing, AWS
Batch's share decay; `domain.config.teams.decay_usage`), then the smallest share held now. Where none
does there is nothing to borrow, and it is decided at once in the walk (always so without quotas:
the unassigned group is alone, and its quota is the whole pool).

* **Borrow.** It starts when its team lends and borrows, stays within its borrow limit, and the
  instances its team may use (free, less the idle quota of teams that reserve theirs) cover it.
* **Priority inside a team.** Else it stops lower-priority jobs *of its own team* (the priority
  rule, with the preemption rules' protection; the nomination phase's victim selection): as many as it lacks
  once the stops in flight land when its team may go on borrowing what it holds (a swap inside the
  team), else enough to get back within its quota, reclaiming from borrowers whatever its quota
  still lacks. Without room even then it is stuck (`nomination`). Counting the stops in flight,
  a job waiting for them keeps its room rather than stop its backfilled jobs again.
* **Features' gates.** The walk started later jobs of its team since it reached this one: when a
  feature's gate holds it now (its team's hold budget no longer covers it: `budget_hold`), it is
  held here, and borrows and stops nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from smq_lambda.domain.jobs.model import Job
from smq_lambda.scheduling import quota_reasons, reasons, room
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.nomination import admit_or_make_room, make_room
from smq_lambda.scheduling.pass_state import PassState, limited
from smq_lambda.scheduling.preemption import select_targets


def by_fair_share(state: PassState, borrowers: Sequence[Candidate]) -> list[Candidate]:
    def share(job: Candidate) -> tuple[float, float, tuple[int, datetime, str]]:
        team = state.ledger.team(job)
        weight = state.config.teams.weight(team, state.config.pools)
        return (state.team_usage.get(team, 0.0) / weight, state.ledger.held_share(team), job.order)

    return sorted(borrowers, key=share)


def borrow(state: PassState, job: Candidate) -> None:
    """Decide a team's first job beyond its quota."""
    if state.regated(job):
        return
    team = state.ledger.team(job)
    beyond = state.ledger.beyond_quota(team, job.demand)
    if not beyond:  # reclaims decided for earlier borrowers brought its team back within its quota
        admit_or_make_room(state, job)
        return
    why_not = room.why_not_borrow(state, job, beyond)
    if why_not is None:
        borrowed = {pool: min(n, job.demand[pool]) for pool, n in beyond.items()}
        lenders = {pool: state.ledger.lenders(pool, n) for pool, n in borrowed.items()}
        state.admit(job, reason=quota_reasons.borrowing(team, borrowed, lenders))
        return
    candidates, protected = room.priority_candidates(state, job)
    to_free, waits = own_room(state, job)
    own = select_targets(to_free, candidates)
    whole = room.whole(state, job)
    if own is None:
        if state.is_first(job):
            short = next(iter(to_free))
            view = room.view(state, short, job.demand[short])
            state.explain(
                job,
                reasons.no_room(view, protected) if whole else quota_reasons.at_quota(team, beyond, why_not, protected),
            )
        state.stuck[team].update(limited(job.demand, state.ledger))
        return
    state.preempt(own, job, _preempted_reason(job, team, to_free if whole else beyond, whole=whole))
    make_room(state, job, released_for_it=waits)


def _preempted_reason(job: Candidate, team: str, lacks: Mapping[str, int], *, whole: bool) -> Callable[[Job], str]:
    def reason(target: Job) -> str:
        if whole:
            return reasons.preempted(job.name, job.priority, target.priority, lacks, reclaimed=target.is_backfill)
        return quota_reasons.preempted_in_team(team, job.name, job.priority, target.priority, lacks)

    return reason


def own_room(state: PassState, job: Candidate) -> tuple[dict[str, int], dict[str, int]]:
    """What `job`'s own team must stop for it (by priority), and what it then waits for its team to
    give back. Within its quota, or when its team may go on borrowing what it holds (a swap inside
    the team), the instances it lacks once the stops in flight land; beyond its borrow limit, what
    it would borrow beyond its quota; a team that may not borrow gets back within its quota, its
    own stops in flight counted (it counts them against its quota until they land: `Ledger.claim`)."""
    team = state.ledger.team(job)
    beyond = state.ledger.beyond_quota(team, job.demand)
    limit = state.config.teams.borrow_limit(team)
    if beyond and not state.ledger.may_borrow(team):
        to_free = {pool: over - state.ledger.releasing_of(team, pool) for pool, over in beyond.items()}
        waits = {pool: min(over, job.demand[pool]) for pool, over in beyond.items()}
        return {pool: n for pool, n in to_free.items() if n > 0}, waits
    if beyond and limit is not None and any(over > limit for over in beyond.values()):
        return dict(beyond), dict(beyond)
    return room.lack(state, job, counting_releasing=True), room.lack(state, job)
