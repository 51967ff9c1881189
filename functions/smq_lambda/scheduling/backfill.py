"""Phase 6 of a pass: a job behind a waiting head of its pools, backfilled where allowed.

Strict order: a job behind a waiting head of one of its pools does not start ahead of it, except by
backfill. Without quotas, where the heads of its pools have their room (by preemption or stops in
flight, kept for them), it claims room of its own as they did (phase 5), or, with backfill on,
starts beside the instances kept for them; where a head is stuck, with backfill on, it starts on
the instances the head cannot use yet (or stops the jobs it outranks to get them), and is reclaimed
first when the head can start.

With quotas, a team's first waiting job holds back its later jobs in that pool; with backfill on,
after the borrowers (phase 4), a later job starts beside its team's waiting heads when the
instances its team may use cover it now (nothing is stopped for it), inside its team's quota, or
beyond it only as borrowing under the borrowing rules. It is the first its team stops when a head
needs the room, and a borrowing one is reclaimed as any borrower.
"""

from __future__ import annotations

from collections.abc import Sequence

from smq_lambda.domain.model import Job
from smq_lambda.scheduling import nomination, quota_reasons, reasons
from smq_lambda.scheduling.pass_state import PassState, limited


def behind_head(state: PassState, job: Job, blocked: Sequence[str]) -> None:
    """Decide `job`, waiting behind the heads of its `blocked` pools (without quotas; with them,
    `backfill_within_quota` after the borrowers)."""
    allowed = state.config.backfill
    stuck = [pool for pool in blocked if pool in state.stuck]
    fits = state.ledger.fits(job.demand)
    if not stuck and not fits:
        nomination.preempt_for_head(state, job)
    elif not stuck and allowed:
        head = state.heads[blocked[0]]
        state.admit(job, backfill=True, reason=reasons.beside_reserved(state.views(job.demand), head.name))
    elif not stuck:
        state.wait(job)
        state.ledger.take(job.demand, state.ledger.team(job))
    elif allowed and fits:
        head = state.heads[stuck[0]]
        reason = reasons.backfill(state.views(job.demand), head.name, state.shortfall(head))
        state.admit(job, backfill=True, reason=reason)
    elif allowed:
        _make_room_to_backfill(state, job, state.heads[stuck[0]])
    else:
        state.wait(job)
        state.stuck.update(limited(job.demand, state.ledger))


def _make_room_to_backfill(state: PassState, job: Job, head: Job) -> None:
    """`job` waits behind a stuck head and does not fit: jobs it outranks are stopped so that it
    can be backfilled once they are gone. They rank below the head too, so their instances would
    not have let the head start."""
    shortfall = state.shortfall(job)
    if shortfall and nomination.preempt_for_priority(state, job, shortfall) is not None:
        state.wait(job)
        return
    state.explain(job, reasons.backfill_awaiting_release(state.views(job.demand), head.name))
    state.ledger.take(job.demand, state.ledger.team(job))


def backfill_within_quota(state: PassState, job: Job) -> None:
    """With quotas: start `job`, behind its team's waiting heads, on the instances its team may use
    now, inside its team's quota or as borrowing; else it waits, its reason computed on read."""
    team = state.ledger.team(job)
    heads = [state.team_heads[team][pool] for pool in job.demand if pool in state.team_heads[team]]
    if not heads or state.lack(job):
        return
    beyond = state.ledger.beyond_quota(team, job.demand)
    if beyond and state.why_not_borrow(job, beyond) is not None:
        return
    if beyond:
        borrowed = {pool: min(n, job.demand[pool]) for pool, n in beyond.items()}
        lenders = {pool: state.ledger.lenders(pool, n) for pool, n in borrowed.items()}
        reason = quota_reasons.backfill_borrowing(team, borrowed, lenders, heads[0].name)
    else:
        quotas = {pool: (state.ledger.claim(team, pool), state.ledger.quota(team, pool) or 0) for pool in job.demand}
        reason = quota_reasons.backfill_within_quota(team, state.views(job.demand), quotas, heads[0].name)
    state.admit(job, backfill=True, reason=reason)
