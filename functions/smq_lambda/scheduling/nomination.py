"""The nomination phase of a pass: nominate preemptions and reclaims for a head that lacks instances.

A head within its team's quota starts when the instances its team may use cover it; else, for what
the stops in flight do not already cover, two rules stop running jobs, both through the one victim
selection (`preemption.select_targets`):

* **reclaim** first: jobs of other teams that run on borrowed capacity, whatever their priority,
  least progress first (`least_progress_first`), never taking a team below its quota, counting
  stops in flight; the preemption rules do not protect them;
* else **priority preemption** inside its team: lower-priority jobs of its team (and backfilled
  jobs behind it) in `preemption_order`, never those the preemption rules protect. Without quotas
  the team is the unassigned group, so every live job of the queue is a candidate.

The instances the head waits for are then kept for it (`Ledger.keep`), so the next job may claim
room of its own. A head without room even then is *stuck*: later jobs of its team start there only
by backfill.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from smq_lambda.domain.jobs.model import Job
from smq_lambda.scheduling import quota_reasons, reasons, room
from smq_lambda.scheduling.pass_state import PassState, limited
from smq_lambda.scheduling.preemption import RECLAIMABLE_STATES, least_progress_first, select_targets


def admit_or_make_room(state: PassState, job: Job) -> None:
    """`job` is within its team's quota: it starts when the instances its team may use cover it,
    else room is made for it."""
    if room.lack(state, job):
        make_room(state, job)
        return
    team = state.ledger.team(job)
    if room.whole(state, job):
        reason = reasons.fits(room.views(state, job.demand))
    else:
        quotas = {pool: (state.ledger.claim(team, pool), state.ledger.quota(team, pool) or 0) for pool in job.demand}
        reason = quota_reasons.within_quota(team, room.views(state, job.demand), quotas)
    state.admit(job, reason=reason)


def make_room(state: PassState, job: Job, released_for_it: Mapping[str, int] | None = None) -> None:
    """`job` lacks instances its team may use: for what the stops in flight do not cover, borrowed
    jobs of other teams are reclaimed, else lower-priority jobs of its own team are preempted, and
    the instances it waits for are kept for it. Without room even then, it is stuck.
    `released_for_it`: what its own team's jobs stopped for it give back, which it waits for even
    when free instances would cover it (its quota does not)."""
    team = state.ledger.team(job)
    shortfall = room.lack(state, job, counting_releasing=True)
    if shortfall:
        targets = reclaim_targets(state, team, shortfall)
        protected = preempt_for_priority(state, job, shortfall) if targets is None else None
        if protected is not None:
            if state.is_first(job):
                short = next(iter(shortfall))
                view = room.view(state, short, job.demand[short])
                whole = room.whole(state, job)
                state.explain(
                    job, reasons.no_room(view, protected) if whole else quota_reasons.no_room_within_quota(team, view)
                )
            state.stuck[team].update(limited(job.demand, state.ledger))
            return
        if targets is not None:
            _reclaim(state, job, team, targets)
    if state.is_first(job):
        state.explain(job, _awaiting_release(state, job, released_for_it or {}))
    state.ledger.keep(team, job.demand)


def _awaiting_release(state: PassState, job: Job, released_for_it: Mapping[str, int]) -> str:
    if room.whole(state, job):
        return reasons.awaiting_release(room.short_views(state, job.demand))
    waits = room.lack(state, job)
    for pool, n in released_for_it.items():
        waits[pool] = max(waits.get(pool, 0), n)
    team = state.ledger.team(job)
    borrowing = state.ledger.may_borrow(team) and bool(state.ledger.beyond_quota(team, job.demand))
    return quota_reasons.awaiting_release(team, waits, borrowing=borrowing)


def preempt_for_priority(state: PassState, job: Job, shortfall: Mapping[str, int]) -> int | None:
    """Stop the fewest live jobs of `job`'s team it may preempt that cover `shortfall`. None when
    done; when even all of them would not cover it, nothing is stopped and the count of the jobs
    the preemption rules protected is returned."""
    candidates, protected = room.priority_candidates(state, job)
    targets = select_targets(shortfall, candidates)
    if targets is None:
        return protected
    state.preempt(
        targets,
        job,
        lambda target: reasons.preempted(
            job.name, job.priority, target.priority, shortfall, reclaimed=target.is_backfill
        ),
    )
    return None


def reclaim_targets(state: PassState, team: str, shortfall: Mapping[str, int]) -> Sequence[Job] | None:
    """The jobs of other teams running on borrowed capacity that `team` reclaims to cover
    `shortfall`; None when they cannot cover it."""
    ledger = state.ledger

    def still_borrowing(job: Job, chosen: Sequence[Job]) -> bool:
        owner = ledger.team(job)
        return any(
            job.demand.get(pool, 0)
            and ledger.borrowing(owner, pool) - sum(c.demand.get(pool, 0) for c in chosen if ledger.team(c) == owner)
            > 0
            for pool in shortfall
        )

    candidates = [
        job
        for job in state.live.values()
        if job.state in RECLAIMABLE_STATES and job.current_attempt is not None and ledger.team(job) != team
    ]
    return select_targets(shortfall, candidates, order=least_progress_first, eligible=still_borrowing)


def _reclaim(state: PassState, job: Job, team: str, targets: Sequence[Job]) -> None:
    def reason(target: Job) -> str:
        owner = state.ledger.team(target)
        pools = [pool for pool in target.demand if state.ledger.borrowing(owner, pool) > 0]
        return quota_reasons.reclaimed(team, job.name, owner, pools or list(target.demand))

    state.preempt(targets, job, reason)
