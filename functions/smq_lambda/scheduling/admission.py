"""The admission phase of a pass: admit within quota, walking the pending jobs in queue order.

Jobs a gate holds (`gates`: too large, in backoff, beyond reach, a feature's such as the budget) are
explained and block nothing. A flexible job is then placed (the placement phase, `placement`): the
walk decides it at the placement chosen, or the placement phase decides it waits in every pool it
prefers. Each job's verdict (`verdicts`, at its placement) is applied in one match:

* `Behind` an earlier waiting job of its team: the backfill phase (`backfill`), after the borrowers
  when another team lends idle quota in its pools (or its head waits for them), else at once;
* `FitOnWarm`: it starts on the warm pool it matches (`warm_supply`; the rules are in `warm_pools`);
* `Fit`: it starts (its team's quota and the instances its team may use, the free ones less the
  idle quota other teams reserve, both cover it);
* else, within its quota: it heads its pools; the warm pools it does not match end first, then the
  nomination phase (`nomination`) applies its room verdict, by reclaim or priority preemption inside
  its team (the targets the placement phase found, when it chose the placement by them);
* else, beyond its quota: the borrowing phase (`borrowing`), after every job within a quota, when
  another team lends idle quota in its pools; when none does, there is nothing to borrow, and the
  borrowing phase decides it at once (priority inside its team).

Without quotas every job is in the unassigned group, whose quota is the whole pool, and no other
team lends, so every job is decided in the walk, in queue order. A head beyond its quota ends no
warm pool: it may not be able to use the instances, and the warm pool may be another team's next
start.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from smq_lambda.domain.jobs.model import Job
from smq_lambda.scheduling import backfill, borrowing, gates, nomination, placement, verdicts, warm_supply
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.pass_state import PassState


class Later(Enum):
    """The phase that decides a job the walk leaves undecided (only with quotas)."""

    BORROW = "borrow"
    """Its team's first job beyond its quota, where another team lends: the borrowing phase."""
    BACKFILL = "backfill"
    """Behind its team's waiting head, where another team lends: the backfill phase, after the borrowers."""


def admit_within_quota(state: PassState, pending: Sequence[Job]) -> dict[Later, list[Candidate]]:
    """Walk `pending` in queue order, deciding each job or leaving it, in order, to the phase named:
    one match over its verdict (`verdicts`), at the placement chosen for it."""
    later: dict[Later, list[Candidate]] = {Later.BORROW: [], Later.BACKFILL: []}
    borrowers: set[str] = set()
    for waiting in pending:
        if gates.set_aside(state, waiting):
            continue
        placed = placement.place(state, waiting)
        if placed is None:
            continue
        job = placed.candidate
        team = state.ledger.team(job)
        lent_to = state.ledger.lent_to(team, job.demand)
        match placed.verdict or verdicts.assess_now(state, job):
            case verdicts.Behind() as behind:
                heads = {state.team_heads[team][pool].name for pool in state.blocked(job)}
                if lent_to or heads & borrowers:
                    later[Later.BACKFILL].append(job)
                else:
                    backfill.behind_head(state, job, behind)
            case verdicts.FitOnWarm(warm=warm):
                warm_supply.start_on(state, job, warm)
            case verdicts.Fit():
                nomination.admit_fitting(state, job)
            case verdict if not state.ledger.beyond_quota(team, job.demand):
                state.wait(job)
                warm_supply.release_for(state, job)
                nomination.make_room(state, job, verdict=verdict if isinstance(verdict, verdicts.MakeRoom) else None)
            case _:
                state.wait(job)
                if lent_to:
                    later[Later.BORROW].append(job)
                    borrowers.add(job.name)
                else:
                    borrowing.borrow(state, job)
    return later
