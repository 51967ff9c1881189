"""Per pool metrics of a scheduler invocation (dimension `pool`), one EMF record per pool:

* WaitTime: for each job the pass started, seconds from its submission;
* PoolInUse and PoolCapacity: what the pass measured (no capacity for an unlimited unpooled type);
* QueueDepth: after a reconciliation, the pool's pending jobs;

and, with an adaptive `spot` section, SpotInterruptionRate (dimension `instance_type`): the spot
interruptions per hour (unit Count) of each type the pass decided with (domain/placements/spot_rates.py).

Warm pools (domain/warm/warm_pools.py): PoolWarm, the instances of PoolInUse that warm pools hold; and,
without a dimension, the totals of every warm pool that has ended: WarmPoolsRetained,
WarmPoolsReused, WarmPoolReuseRate (reused ÷ retained) and WarmPoolRetainedInstanceHours (what they
billed while warm).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

if TYPE_CHECKING:
    from smq_lambda.domain.warm.warm_pools import WarmPoolTotals
    from smq_lambda.service.passes import PassReport
    from smq_lambda.service.reconciliation import Reconciliation


def record_pool_metrics(
    report: PassReport, reconciliation: Reconciliation | None, now: datetime, namespace: str
) -> None:
    waits: dict[str, list[float]] = {}
    for job in report.started:
        waits.setdefault(job.where.pool, []).append((now - job.submitted_at).total_seconds())
    usage = {pool.pool: pool for pool in report.summary.pools} if report.summary is not None else {}
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
            per_pool.add_metric(name="PoolWarm", unit=MetricUnit.Count, value=usage[pool].warm)
            capacity = usage[pool].capacity
            if capacity is not None:
                per_pool.add_metric(name="PoolCapacity", unit=MetricUnit.Count, value=capacity)
        per_pool.flush_metrics()
    for instance_type, rate in sorted(report.summary.spot_rates.items() if report.summary is not None else ()):
        per_type = EphemeralMetrics(namespace=namespace, service="smq")
        per_type.add_dimension(name="instance_type", value=instance_type)
        per_type.add_metric(name="SpotInterruptionRate", unit=MetricUnit.Count, value=rate)
        per_type.flush_metrics()
    if report.warm_totals is not None:
        _record_warm_totals(report.warm_totals, namespace)


def _record_warm_totals(totals: WarmPoolTotals, namespace: str) -> None:
    warm = EphemeralMetrics(namespace=namespace, service="smq")
    warm.add_metric(name="WarmPoolsRetained", unit=MetricUnit.Count, value=totals.retained)
    warm.add_metric(name="WarmPoolsReused", unit=MetricUnit.Count, value=totals.reused)
    warm.add_metric(
        name="WarmPoolRetainedInstanceHours", unit=MetricUnit.Count, value=totals.retained_instance_s / 3600
    )
    if totals.reuse_rate is not None:
        warm.add_metric(name="WarmPoolReuseRate", unit=MetricUnit.Count, value=totals.reuse_rate)
    warm.flush_metrics()
