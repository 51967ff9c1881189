"""Phase 3 of a pass: admit within quota, walking the pending jobs in queue order.

Rule: a job starts when its team's quota and the instances its team may use (the free ones, less
the idle quota other teams reserve) both cover it, and no earlier job of its team waits for one of
its pools. Without quotas every job is in the unassigned group, whose quota is the whole pool, so
the rule reads: a job starts when it fits and no job ahead of it waits for its pools.

A job that does not start is the head of its pools (and of its team's) and one of the later
phases decides for it, in the same walk (so that later jobs see what was decided) unless it must
wait for the borrowers:

* beyond its team's quota (with quotas): it waits for phase 4 (`borrowing`);
* within its quota, or without quotas, but short of free instances: phase 5 (`nomination`) makes
  room for it, by reclaim or priority preemption;
* behind a waiting head of its pools: phase 6 (`backfill`), at once without quotas, after the
  borrowers with quotas (a team's head may yet borrow the free instances).
"""

from __future__ import annotations

from enum import Enum

from smq_lambda.domain.model import Job
from smq_lambda.scheduling import backfill, nomination, quota_reasons, reasons
from smq_lambda.scheduling.pass_state import PassState


class Later(Enum):
    """The phase that decides a job the walk leaves undecided (with quotas)."""

    BORROW = "borrow"
    """Its team's first job beyond its quota: phase 4, after every job within a quota."""
    BACKFILL = "backfill"
    """Behind its team's waiting head: phase 6, after the borrowers."""


def admit_within_quota(state: PassState, job: Job) -> Later | None:
    """Decide `job`, or name the later phase that will."""
    if state.skip(job):
        return None
    team = state.ledger.team(job)
    blocked = [pool for pool in job.demand if pool in state.team_heads[team]]
    if blocked and state.quotas:
        return Later.BACKFILL if state.config.backfill else None
    if blocked:
        backfill.behind_head(state, job, blocked)
        return None
    if not state.quotas:
        if state.ledger.fits(job.demand):
            state.admit(job, reason=reasons.fits(state.views(job.demand)))
        else:
            nomination.preempt_for_head(state, job)
        return None
    state.wait(job)
    if state.ledger.beyond_quota(team, job.demand):
        return Later.BORROW
    admit_or_make_room(state, job)
    return None


def admit_or_make_room(state: PassState, job: Job) -> None:
    """`job` is within its team's quota: it starts when the instances its team may use cover it,
    else room is made for it (reclaim)."""
    if state.lack(job):
        nomination.make_room_within_quota(state, job)
        return
    team = state.ledger.team(job)
    quotas = {pool: (state.ledger.claim(team, pool), state.ledger.quota(team, pool) or 0) for pool in job.demand}
    state.admit(job, reason=quota_reasons.within_quota(team, state.views(job.demand), quotas))
