"""What a scheduler invocation measures for ops, as pure functions over the jobs after a pass:
the usage of each pool (published for GET /pools) and the jobs stuck between two states (the
`StuckJobs` metric an alarm watches)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from smq_lambda.domain.model import Job
from smq_lambda.domain.states import LIVE_STATES, JobState
from smq_lambda.ports import PoolUsage, PoolUsageReport
from smq_lambda.scheduling.snapshot import SchedulerConfig

STUCK_STATES = frozenset({JobState.STARTING, JobState.PREEMPTING, JobState.STOPPING})
"""States a job passes through on its way elsewhere: SageMaker normally moves it on in minutes."""
STUCK_AFTER = timedelta(minutes=15)


def count_stuck(jobs: Iterable[Job], now: datetime, threshold: timedelta = STUCK_AFTER) -> int:
    """Jobs in a passing state whose last change is older than `threshold`: a lost event that
    reconciliation could not repair, a stop SageMaker does not carry out, a create that hangs."""
    return sum(
        1 for job in jobs if job.state in STUCK_STATES and now - (job.updated_at or job.submitted_at) > threshold
    )


def pool_usage(
    jobs: Iterable[Job], external_usage: Mapping[str, int], config: SchedulerConfig, now: datetime
) -> PoolUsageReport:
    """Every configured pool, then any instance type that active jobs use without a pool: capacity,
    instances in use (live queue jobs plus training jobs outside the queue) and pending jobs."""
    active = list(jobs)
    names = list(config.pools)
    for job in active:
        names.extend(pool for pool in job.demand if pool not in names)
    live = [job for job in active if job.state in LIVE_STATES]
    pools = tuple(
        PoolUsage(
            pool=pool,
            capacity=config.capacity(pool),
            in_use=sum(job.demand.get(pool, 0) for job in live) + external_usage.get(pool, 0),
            pending=sum(1 for job in active if job.state is JobState.PENDING and pool in job.demand),
        )
        for pool in names
    )
    return PoolUsageReport(pools=pools, measured_at=now)
