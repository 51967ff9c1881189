"""The backfill phase of a pass: a job behind its team's waiting head of one of its pools.

Strict order: such a job does not start ahead of the head, except by backfill. One rule, with or
without quotas (without them every job is in the unassigned group, so "its team" is the queue):

* where the heads of its pools have their room (by preemption or stops in flight, kept for them),
  it claims room of its own as they did (the borrowing and nomination phases), or, with backfill on, starts beside the
  instances kept for them when the instances its team may use cover it now;
* where a head is *stuck* (no room even by preemption), with backfill on, it starts on the
  instances its team may use now, or stops the jobs of its team it outranks to get them (they rank
  below the head too), and is the first stopped when the head can start; with backfill off it
  waits, and so do the jobs behind it.

"May use" keeps a backfilled job inside its team's quota, or beyond it only as borrowing under the
borrowing rules (`PassState.why_not_borrow`); a borrowing one is reclaimed as any borrower.
"""

from __future__ import annotations

from smq_lambda.scheduling import borrowing, nomination, quota_reasons, reasons, room, verdicts
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.pass_state import PassState, limited


def backfill(state: PassState, job: Candidate) -> None:
    """Decide `job`, left by the walk until the borrowers were decided: behind its team's heads
    still waiting, or as a head itself where they all started."""
    if (verdict := verdicts.behind(state, job)) is not None:
        behind_head(state, job, verdict)
        return
    state.wait(job)
    borrowing.borrow(state, job)


def behind_head(state: PassState, job: Candidate, verdict: verdicts.Behind) -> None:
    """Apply `job`'s `Behind` verdict: it waits behind its team's heads of the pools they block."""
    team = state.ledger.team(job)
    allowed = state.config.backfill
    blocked = state.blocked(job)
    stuck = [pool for pool in blocked if pool in state.stuck[team]]
    starts = verdict.starts
    if not stuck and not starts:
        state.wait(job)
        borrowing.borrow(state, job)
    elif not stuck and allowed:
        head = state.team_heads[team][blocked[0]]
        state.admit(job, backfill=True, reason=_reason(state, job, head, None))
    elif not stuck:
        state.wait(job)
        state.ledger.take(job.demand, team)
    elif allowed and starts:
        head = state.team_heads[team][stuck[0]]
        state.admit(job, backfill=True, reason=_reason(state, job, head, room.pool_lack(state, head)))
    elif allowed:
        _make_room_to_backfill(state, job, state.team_heads[team][stuck[0]])
    else:
        state.wait(job)
        state.stuck[team].update(limited(job.demand, state.ledger))


def _reason(state: PassState, job: Candidate, head: Candidate, head_lacks: dict[str, int] | None) -> str:
    """Why `job` is backfilled behind `head`: stuck (`head_lacks`, what it lacks even after the
    stops in flight), or waiting only for instances kept for it (None)."""
    views = room.views(state, job.demand)
    if room.whole(state, job):
        if head_lacks is None:
            return reasons.beside_reserved(views, head.name)
        return reasons.backfill(views, head.name, head_lacks)
    team = state.ledger.team(job)
    beyond = state.ledger.beyond_quota(team, job.demand)
    if beyond:
        borrowed = {pool: min(n, job.demand[pool]) for pool, n in beyond.items()}
        lenders = {pool: state.ledger.lenders(pool, n) for pool, n in borrowed.items()}
        return quota_reasons.backfill_borrowing(team, borrowed, lenders, head.name)
    quotas = {pool: (state.ledger.claim(team, pool), state.ledger.quota(team, pool) or 0) for pool in job.demand}
    return quota_reasons.backfill_within_quota(team, views, quotas, head.name)


def _make_room_to_backfill(state: PassState, job: Candidate, head: Candidate) -> None:
    """`job` waits behind a stuck head and cannot start: jobs of its team it outranks are stopped
    so that it can be backfilled once they are gone. They rank below the head too, so their
    instances would not have let the head start."""
    to_free, _ = borrowing.own_room(state, job)
    if to_free and nomination.preempt_for_priority(state, job, to_free) is not None:
        state.wait(job)
        return
    state.explain(job, reasons.backfill_awaiting_release(room.views(state, job.demand), head.name))
    state.ledger.take(job.demand, state.ledger.team(job))
