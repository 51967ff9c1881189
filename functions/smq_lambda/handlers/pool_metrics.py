"""Per pool metrics of a scheduler invocation (dimension `pool`), one EMF record per pool:

* WaitTime: for each job the pass started, seconds from its submission;
* PoolInUse and PoolCapacity: what the pass measured (no capacity for an unlimited unpooled type);
* QueueDepth: after a reconciliation, the pool's pending jobs.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

if TYPE_CHECKING:
    from smq_lambda.service.passes import PassReport
    from smq_lambda.service.reconciliation import Reconciliation


def record_pool_metrics(
    report: PassReport, reconciliation: Reconciliation | None, now: datetime, namespace: str
) -> None:
    waits: dict[str, list[float]] = {}
    for job in report.started:
        waits.setdefault(job.pool, []).append((now - job.submitted_at).total_seconds())
    usage = {pool.pool: pool for pool in report.usage.pools} if report.usage is not None else {}
    depth = reconciliation.pending_by_pool if reconciliation is not None else {}
    for pool in sorted(set(waits) | set(depth) | set(usage)):
        per_pool = EphemeralMetrics(namespace=namespace, service="smq")
        per_pool.add_dimension(name="pool", value=pool)
        if reconciliation is not None:
            per_pool.add_metric(name="QueueDepth", unit=MetricUnit.Count, value=depth.get(pool, 0))
        for waited in waits.get(pool, ()):
            per_pool.add_metric(name="WaitTime", unit=MetricUnit.Seconds, value=waited)
        if pool in usage:
            per_pool.add_metric(name="PoolInUse", unit=MetricUnit.Count, value=usage[pool].in_use)
            capacity = usage[pool].capacity
            if capacity is not None:
                per_pool.add_metric(name="PoolCapacity", unit=MetricUnit.Count, value=capacity)
        per_pool.flush_metrics()
