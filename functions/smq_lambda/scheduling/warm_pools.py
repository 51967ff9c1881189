"""Warm pools in the pass: instances a finished attempt keeps warm are capacity, reused without
breaking priority order, and the queue decides how long each start keeps its own.

A warm pool (domain/warm/warm_pools.py) holds its instances in its pool, like a job outside the queue:
the ledger counts them as used, and as on their way back once the queue has ended the warm pool.
They count against no team's quota. Three rules:

1. **Reuse.** When the walk reaches a job whose warm key matches an available warm pool of the
   pool it would start in (same key, same count), and no earlier job of its team waits for that
   pool, the warm pool's instances count as free *for that job*: when they, its team's quota and
   the instances its team may use then cover it, it starts there (SageMaker reuses a matching
   cluster by itself; the queue only starts the job while the pool is warm), the warm pool that
   ends soonest first. Its start reason names the warm pool. Otherwise the warm pool stays held.
2. **Release for a job ahead.** A job the walk makes wait (a head of its pools, within its
   quota: a job beyond it may not use them) that lacks instances of a pool, even counting the stops
   in flight, ends warm pools there that it does not match, soonest ending first, until what it lacks is covered (`ReleaseWarmPool`:
   KeepAlivePeriodInSeconds 0). Their instances count as on their way back, before any running
   job is preempted for it: a job ahead of every job that matches a warm pool comes first.
3. **Keep-alive** (with a `warm_pools` section, after the walk): each start of a job that may
   leave a warm pool keeps its request's keep-alive, at most `max_keep_alive_s`, while a matching
   job (same warm key) still waits among the pending jobs the pass saw; when none does, its
   keep-alive is removed (idle warm instances bill for nothing), except that a job that starts on a
   warm pool keeps REUSE_KEEP_ALIVE_S (SageMaker reuses a warm pool only for a job that gives a
   keep-alive). Without the section every request is sent as submitted.
4. **Release what nothing will reuse** (with a `warm_pools` section, after the walk): a warm pool
   still held that no pending job the pass saw (and did not start) matches is ended: idle warm
   instances bill for nothing, and the capacity is free for whoever comes next. (The keep-alive of
   rule 3 is decided when a job starts; this covers the jobs that were waiting then and started
   elsewhere since, or were cancelled. `make bench-warm-pools` measured it: idle warm hours 0.196 of
   reused hours without it on one seed.) A matching job submitted after the release starts cold.

Rules 1 and 2 act during the walk, on warm pools as capacity (warm_supply.py, in the core: the
verdicts know a warm pool a job matches); rules 3 and 4 after it (`WarmPoolsFeature`).

A pass without warm pools or warm keys decides exactly as before warm pools existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from smq_lambda.domain.config.warm_pool_document import WarmPoolPolicy
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.warm.warm_pools import REUSE_KEEP_ALIVE_S
from smq_lambda.scheduling.actions import Action, ReleaseWarmPool, StartJob
from smq_lambda.scheduling.features import Feature
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.warm_book import WarmBook


def release_unmatched(state: PassState, pending: Sequence[Job]) -> None:
    """Rule 4: end the held warm pools no pending job the pass saw, and did not start, matches."""
    if state.config.warm_pools is None:
        return
    started = {action.job_name for action in state.actions if isinstance(action, StartJob)}
    wanted = {want for job in pending if job.name not in started for want in _wants(job)}
    for warm in list(state.warm.held):
        if (warm.key, warm.pool, warm.count) in wanted:
            continue
        state.warm.held.remove(warm)
        state.warm.releases.append(ReleaseWarmPool(warm.training_job_name, "no waiting job matches it"))
        state.ledger.release_warm(warm)


def _wants(job: Job) -> set[tuple[str, str, int]]:
    """The warm pools (key, pool, instances) a pending job would start on: at its demand, or at each
    of its placements."""
    wants = {(p.warm_key, p.pool_name, p.count) for p in job.placements if p.warm_key is not None}
    if job.warm_key is not None and len(job.demand) == 1:
        pool, count = next(iter(job.demand.items()))
        wants.add((job.warm_key, pool, count))
    return wants


def mark_warm_starts(
    actions: Sequence[Action], pending: Sequence[Job], book: WarmBook, policy: WarmPoolPolicy | None
) -> list[Action]:
    """`actions` with each start's warm pool (rule 1: in its placement) and, with a policy, its
    keep-alive ceiling (rule 3: `StartJob.keep_alive_s`)."""
    started = {action.job_name for action in actions if isinstance(action, StartJob)}
    by_name = {job.name: job for job in pending}
    waiting = {key for job in pending if job.name not in started for key in _warm_keys(job)}
    decided: list[Action] = []
    for action in actions:
        job = by_name.get(action.job_name) if isinstance(action, StartJob) else None
        if isinstance(action, StartJob) and job is not None and (key := _started_key(job, action)) is not None:
            reused = book.reused.get(job.name)
            if reused is not None and action.placement is not None:
                action = replace(action, placement=replace(action.placement, warm_pool=reused.training_job_name))
            if policy is not None:
                ceiling = policy.max_keep_alive_s if key in waiting else REUSE_KEEP_ALIVE_S if reused else 0
                action = replace(action, keep_alive_s=ceiling)
        decided.append(action)
    return decided


def _warm_keys(job: Job) -> set[str]:
    """The warm keys a pending job may start with: its own, or each of its placements'."""
    keys = {job.warm_key, *(placement.warm_key for placement in job.placements)}
    return {key for key in keys if key is not None}


def _started_key(job: Job, start: StartJob) -> str | None:
    """The warm key a start leaves and reuses warm pools by: its placement's for a flexible job."""
    return start.placement.warm_key if job.placements and start.placement is not None else job.warm_key


class WarmPoolsFeature(Feature):
    """Warm pools after the walk: rule 4's releases, then each start's warm pool and keep-alive."""

    def finish(self, state: PassState, pending: Sequence[Job], actions: list[Action]) -> list[Action]:
        release_unmatched(state, pending)
        return mark_warm_starts(actions, pending, state.warm, state.config.warm_pools)
