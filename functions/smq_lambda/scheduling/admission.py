"""The admission phase of a pass: admit within quota, walking the pending jobs in queue order.

Jobs a gate holds (`gates`: too large, in backoff, beyond reach, beyond budget) are explained and
block nothing. Rule: a job starts when its team's quota and the instances its team may use (the free ones, less
the idle quota other teams reserve) both cover it, and no earlier job of its team waits for one of
its pools. Without quotas every job is in the unassigned group, whose quota is the whole pool, so
the rule reads: a job starts when it fits and no job ahead of it waits for its pools.

A job that does not start is decided by a later phase, in the same walk (so that later jobs see
what was decided) unless the borrowers may change what it can have:

* the head of its team's pools, within its quota but short of instances: the nomination phase (`nomination`)
  makes room for it, by reclaim or priority preemption inside its team;
* beyond its quota: the borrowing phase (`borrowing`), after every job within a quota, when another team lends
  idle quota in its pools; when none does, there is nothing to borrow, and the borrowing phase decides it at
  once (priority inside its team);
* behind a waiting head of its team: the backfill phase (`backfill`), after the borrowers when another team
  lends idle quota in its pools (or its head waits for them), else at once.

Without quotas no other team lends, so every job is decided in the walk, in queue order.

A flexible job is first placed (the placement phase, `placement`): the walk decides it at the
placement chosen, or the placement phase decides it waits in every pool it prefers.

Warm pools (`warm_supply`; the rules are in `warm_pools`): a job that matches one starts on it when
that makes it fit, before the rule above; a head within its quota that lacks instances ends warm
pools it does not match before anything is preempted for it (a head beyond its quota ends none: it
may not be able to use them, and the warm pool may be another team's next start).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from smq_lambda.domain.jobs.model import Job
from smq_lambda.scheduling import backfill, borrowing, gates, nomination, placement, warm_supply
from smq_lambda.scheduling.pass_state import PassState


class Later(Enum):
    """The phase that decides a job the walk leaves undecided (only with quotas)."""

    BORROW = "borrow"
    """Its team's first job beyond its quota, where another team lends: the borrowing phase."""
    BACKFILL = "backfill"
    """Behind its team's waiting head, where another team lends: the backfill phase, after the borrowers."""


def admit_within_quota(state: PassState, pending: Sequence[Job]) -> dict[Later, list[Job]]:
    """Walk `pending` in queue order, deciding each job or leaving it, in order, to the phase named."""
    later: dict[Later, list[Job]] = {Later.BORROW: [], Later.BACKFILL: []}
    borrowers: set[str] = set()
    for waiting in pending:
        if gates.set_aside(state, waiting):
            continue
        job = placement.place(state, waiting)
        if job is None or warm_supply.reuse(state, job):
            continue
        team = state.ledger.team(job)
        lent_to = state.ledger.lent_to(team, job.demand)
        if blocked := state.blocked(job):
            heads = {state.team_heads[team][pool].name for pool in blocked}
            if lent_to or heads & borrowers:
                later[Later.BACKFILL].append(job)
            else:
                backfill.behind_head(state, job, blocked)
            continue
        state.wait(job)
        if not state.ledger.beyond_quota(team, job.demand):
            warm_supply.release_for(state, job)
            nomination.admit_or_make_room(state, job)
        elif lent_to:
            later[Later.BORROW].append(job)
            borrowers.add(job.name)
        else:
            borrowing.borrow(state, job)
    return later
