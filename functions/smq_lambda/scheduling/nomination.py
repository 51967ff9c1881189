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

from collections.abc import Callable, Mapping, Sequence

from smq_lambda.domain.jobs.model import Job
from smq_lambda.scheduling import quota_reasons, reasons, room, verdicts
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.pass_state import PassState, limited
from smq_lambda.scheduling.preemption import select_targets


def admit_or_make_room(state: PassState, job: Candidate) -> None:
    """`job` is within its team's quota: it starts when the instances its team may use cover it,
    else room is made for it."""
    if room.lack(state, job):
        make_room(state, job)
    else:
        admit_fitting(state, job)


def admit_fitting(state: PassState, job: Candidate) -> None:
    """Start `job`, whose verdict is `Fit`: the instances its team may use cover it within its quota."""
    team = state.ledger.team(job)
    views = room.views(state, job.demand)
    if room.whole(state, job):
        reason = reasons.fits(views)
    else:
        quotas = {pool: (state.ledger.claim(team, pool), state.ledger.quota(team, pool) or 0) for pool in job.demand}
        reason = quota_reasons.within_quota(team, views, quotas)
    state.admit(job, reason=reason)


def make_room(
    state: PassState,
    job: Candidate,
    released_for_it: Mapping[str, int] | None = None,
    verdict: verdicts.MakeRoom | None = None,
) -> None:
    """`job` lacks instances its team may use: apply its room verdict (`verdicts.room_for`, or
    `verdict` when the placement phase chose its placement by it, so the targets are selected once):
    the borrowed jobs of other teams it reclaims, else the lower-priority jobs of its own team it
    preempts, are stopped, and the instances it waits for are kept for it. Without room even then,
    it is stuck. `released_for_it`: what its own team's jobs stopped for it give back, which it
    waits for even when free instances would cover it (its quota does not)."""
    team = state.ledger.team(job)
    found = verdict if verdict is not None else verdicts.room_for(state, job, ending_warm=False)
    if isinstance(found, verdicts.NoFit):
        if state.is_first(job):
            state.explain(job, _no_room(state, job, team))
        state.stuck[team].update(limited(job.demand, state.ledger))
        return
    if found.reclaim:
        _reclaim(state, job, team, found.targets)
    elif found.targets:
        lacks = room.lack(state, job, counting_releasing=True)
        state.preempt(found.targets, job, _preempted_reason(job, lacks))
    if state.is_first(job):
        state.explain(job, _awaiting_release(state, job, released_for_it or {}))
    state.ledger.keep(team, job.demand)


def _no_room(state: PassState, job: Candidate, team: str) -> str:
    """Why no room can be made for `job`: the first pool it lacks, and the jobs protected there."""
    short = next(iter(room.lack(state, job, counting_releasing=True)))
    view = room.view(state, short, job.demand[short])
    if room.whole(state, job):
        _, protected = room.priority_candidates(state, job)
        return reasons.no_room(view, protected)
    return quota_reasons.no_room_within_quota(team, view)


def _preempted_reason(job: Candidate, lacks: Mapping[str, int]) -> Callable[[Job], str]:
    def reason(target: Job) -> str:
        return reasons.preempted(job.name, job.priority, target.priority, lacks, reclaimed=target.is_backfill)

    return reason


def _awaiting_release(state: PassState, job: Candidate, released_for_it: Mapping[str, int]) -> str:
    if room.whole(state, job):
        return reasons.awaiting_release(room.short_views(state, job.demand))
    waits = room.lack(state, job)
    for pool, n in released_for_it.items():
        waits[pool] = max(waits.get(pool, 0), n)
    team = state.ledger.team(job)
    borrowing = state.ledger.may_borrow(team) and bool(state.ledger.beyond_quota(team, job.demand))
    return quota_reasons.awaiting_release(team, waits, borrowing=borrowing)


def preempt_for_priority(state: PassState, job: Candidate, lacks: Mapping[str, int]) -> int | None:
    """Stop the fewest live jobs of `job`'s team it may preempt that cover `lacks`. None when
    done; when even all of them would not cover it, nothing is stopped and the count of the jobs
    the preemption rules protected is returned."""
    candidates, protected = room.priority_candidates(state, job)
    targets = select_targets(lacks, candidates)
    if targets is None:
        return protected
    state.preempt(targets, job, _preempted_reason(job, lacks))
    return None


def _reclaim(state: PassState, job: Candidate, team: str, targets: Sequence[Job]) -> None:
    def reason(target: Job) -> str:
        owner = state.ledger.team(target)
        pools = [pool for pool in target.demand if state.ledger.borrowing(owner, pool) > 0]
        return quota_reasons.reclaimed(team, job.name, owner, pools or list(target.demand))

    state.preempt(targets, job, reason)
