"""Phase 5 of a pass: nominate preemptions and reclaims for a head that lacks instances.

Two rules stop running jobs, both through the one victim selection (`preemption.select_targets`):

* **priority preemption**: a head stops lower-priority jobs (and backfilled jobs behind it) in
  `preemption_order`, never those the preemption rules protect, for what the stops in flight do
  not already cover. Without quotas it considers every live job; with quotas, only its own team's
  (phase 4, `borrowing`);
* **reclaim**: a job within its team's quota stops the jobs of other teams that run on borrowed
  capacity, whatever their priority, least progress first (`least_progress_first`), never taking a
  team below its quota, counting stops in flight; the preemption rules do not protect them.

The instances the head waits for are then kept for it (taken in the ledger), so the next job may
claim room of its own. A head without room even then is *stuck*: later jobs of its pools start only
by backfill.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from smq_lambda.domain.model import Job
from smq_lambda.scheduling import quota_reasons, reasons
from smq_lambda.scheduling.pass_state import PassState, limited
from smq_lambda.scheduling.preemption import RECLAIMABLE_STATES, least_progress_first, select_targets


def preempt_for_head(state: PassState, head: Job) -> None:
    """`head` does not fit and every job waiting ahead of it in its pools has its room: lower
    jobs are stopped for it unless stops in flight already cover it, and the instances it waits
    for are kept for it. Without room even then, it is stuck. Only the first job waiting for a pool
    gets its reason written; a reader of a later one is told its position (`reasons.queued`)."""
    state.wait(head)
    shortfall = state.shortfall(head)
    first = state.is_first(head)
    if shortfall:
        protected = preempt_for_priority(state, head, shortfall)
        if protected is not None:
            short = next(iter(shortfall))
            if first:
                state.explain(head, reasons.no_room(state.view(short, head.demand[short]), protected))
            state.stuck.update(limited(head.demand, state.ledger))
            return
    if first:
        state.explain(head, reasons.awaiting_release(state.short_views(head.demand)))
    state.ledger.take(head.demand, state.ledger.team(head))


def preempt_for_priority(state: PassState, job: Job, shortfall: Mapping[str, int]) -> int | None:
    """Stop the fewest live jobs `job` may preempt that cover `shortfall`. None when done; when
    even all of them would not cover it, nothing is stopped and the count of the jobs the
    preemption rules protected is returned."""
    candidates, protected = state.priority_candidates(job)
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


def make_room_within_quota(state: PassState, job: Job, released_for_it: Mapping[str, int] | None = None) -> None:
    """`job` fits in its team's quota but not in the instances its team may use: borrowed jobs of
    other teams are reclaimed for what the stops in flight do not cover, and the instances it
    waits for are kept for it. `released_for_it`: what its own team's jobs stopped for it give
    back, which it waits for even when free instances would cover it (its quota does not)."""
    team = state.ledger.team(job)
    shortfall = state.lack(job, counting_releasing=True)
    if shortfall:
        targets = reclaim_targets(state, team, shortfall)
        if targets is None:
            short = next(iter(shortfall))
            state.explain(job, quota_reasons.no_room_within_quota(team, state.view(short, job.demand[short])))
            return
        _reclaim(state, job, team, targets)
    waits = state.lack(job)
    for pool, n in (released_for_it or {}).items():
        waits[pool] = max(waits.get(pool, 0), n)
    state.explain(job, quota_reasons.awaiting_release(team, waits))
    state.ledger.keep(team, job.demand)


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
