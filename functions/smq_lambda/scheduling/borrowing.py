"""Phase 4 of a pass (with quotas): borrow, then priority inside a team.

The first job of each team that would exceed its quota is decided here, after every job within a
quota, teams taken in fair-share order: the smallest decayed usage per instance of quota first
(Kueue's admission fair sharing, AWS Batch's share decay; `domain.teams.decay_usage`), then the
smallest share held now.

* **Borrow.** It starts when its team lends and borrows, stays within its borrow limit, and the
  instances its team may use (free, less the idle quota of teams that reserve theirs) cover it.
* **Priority inside a team.** Else it stops lower-priority jobs *of its own team* (the priority
  rule, with the preemption rules' protection; phase 5's victim selection): as many as it lacks
  when its team may go on borrowing what it holds (a swap inside the team), else enough to get back
  within its quota, reclaiming from borrowers whatever its quota still lacks. Stops already in
  flight count: a job waiting for them keeps its room rather than stop its backfilled jobs again.
* **Budget.** The walk started later jobs of its team since it reached this one: when its team's
  hold budget no longer covers it, it is held here (`budget_hold`), and borrows and stops nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from smq_lambda.domain.model import Job
from smq_lambda.scheduling import quota_reasons
from smq_lambda.scheduling.admission import admit_or_make_room
from smq_lambda.scheduling.nomination import make_room_within_quota
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.preemption import select_targets


def by_fair_share(state: PassState, borrowers: Sequence[Job]) -> list[Job]:
    def share(job: Job) -> tuple[float, float, tuple[int, datetime, str]]:
        team = state.ledger.team(job)
        weight = state.config.teams.weight(team, state.config.pools)
        return (state.team_usage.get(team, 0.0) / weight, state.ledger.held_share(team), job.order)

    return sorted(borrowers, key=share)


def borrow(state: PassState, job: Job) -> None:
    """Decide a team's first job beyond its quota."""
    if state.held_by_budget(job):
        return
    team = state.ledger.team(job)
    beyond = state.ledger.beyond_quota(team, job.demand)
    if not beyond:  # reclaims decided for earlier borrowers brought its team back within its quota
        admit_or_make_room(state, job)
        return
    why_not = state.why_not_borrow(job, beyond)
    if why_not is None:
        borrowed = {pool: min(n, job.demand[pool]) for pool, n in beyond.items()}
        lenders = {pool: state.ledger.lenders(pool, n) for pool, n in borrowed.items()}
        state.admit(job, reason=quota_reasons.borrowing(team, borrowed, lenders))
        return
    candidates, protected = state.priority_candidates(job, among=lambda other: state.ledger.team(other) == team)
    room, waits = _own_room(state, job, beyond)
    own = select_targets(room, candidates)
    if own is None:
        state.explain(job, quota_reasons.at_quota(team, beyond, why_not, protected))
        return
    state.preempt(
        own,
        job,
        lambda target: quota_reasons.preempted_in_team(team, job.name, job.priority, target.priority, beyond),
    )
    make_room_within_quota(state, job, released_for_it=waits)


def _own_room(state: PassState, job: Job, beyond: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """What `job`'s own team must stop for it, and what it then waits for its team to give back.
    A team that may go on borrowing what it holds swaps jobs (the instances `job` lacks beyond those
    on their way back: without counting them, the stops it already sent would be sent again to the
    jobs backfilled meanwhile on the free ones); any other gets back within its quota, its own stops
    in flight counted (a team that may not borrow counts them against its quota until they land:
    `Ledger.claim`)."""
    team = state.ledger.team(job)
    limit = state.config.teams.borrow_limit(team)
    if not state.ledger.may_borrow(team):
        room = {pool: over - state.ledger.releasing_of(team, pool) for pool, over in beyond.items()}
        waits = {pool: min(over, job.demand[pool]) for pool, over in beyond.items()}
        return {pool: n for pool, n in room.items() if n > 0}, waits
    if limit is not None and any(over > limit for over in beyond.values()):
        return dict(beyond), dict(beyond)
    return state.lack(job, counting_releasing=True), state.lack(job)
