"""What a scheduler invocation measures for ops, as pure functions over the live jobs after a pass:
the usage of each pool (published for GET /pools) and the jobs stuck between two states (the
`StuckJobs` metric an alarm watches; those states are all live, so the live jobs are enough)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from smq_lambda.domain.config.teams import held_in_pools
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import LIVE_STATES, JobState
from smq_lambda.domain.warm.warm_pools import WarmPool
from smq_lambda.pass_summary import PassSummary, PoolMeasure
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.service.team_measures import team_measures, waiting_by_group

STUCK_STATES = frozenset({JobState.STARTING, JobState.PREEMPTING, JobState.STOPPING})
"""States a job passes through on its way elsewhere: SageMaker normally moves it on in minutes."""
STUCK_AFTER = timedelta(minutes=15)


def count_stuck(jobs: Iterable[Job], now: datetime, threshold: timedelta = STUCK_AFTER) -> int:
    """Jobs in a passing state whose last change is older than `threshold`: a lost event that
    reconciliation could not repair, a stop SageMaker does not carry out, a create that hangs."""
    return sum(
        1 for job in jobs if job.state in STUCK_STATES and now - (job.updated_at or job.submitted_at) > threshold
    )


def pass_summary(
    live: Iterable[Job],
    outside: Mapping[str, int],
    config: SchedulerConfig,
    now: datetime,
    heads: Mapping[str, str],
    pending: Iterable[Job] = (),
    warm_pools: Iterable[WarmPool] = (),
) -> PassSummary:
    """Every configured pool, then any instance type live jobs or waiting heads use without a pool
    (not the types only jobs outside the queue use): capacity, instances in use (live queue jobs,
    training jobs outside the queue and `warm_pools`), of them the warm ones, and the job that waits
    first for it.

    With quotas configured, also each team's share of those pools (service/team_measures.py);
    `pending` are the pending jobs the pass saw (its fronts), counted per team and pool with the
    longest wait among them."""
    held = [job for job in live if job.state in LIVE_STATES]
    warm = tuple(warm_pools)
    ledger = Ledger.measure(Snapshot(jobs=tuple(held), external_usage=outside, warm_pools=warm), config)
    warm_held = Counter[str]()
    for kept in warm:
        warm_held.update(kept.demand)
    names = list(config.pools)
    for pool in [*(pool for job in held for pool in job.demand), *heads]:
        if pool not in names:
            names.append(pool)
    pools = tuple(
        PoolMeasure(
            pool=pool,
            capacity=ledger.capacity(pool),
            in_use=ledger.used(pool),
            head=heads.get(pool),
            warm=warm_held[pool],
        )
        for pool in names
    )
    teams = team_measures(
        {measure.pool: measure.capacity for measure in pools},
        config.teams,
        held_in_pools(held, config.teams),
        waiting_by_group(pending, config.teams, now),
    )
    return PassSummary(pools=pools, measured_at=now, teams=teams)
