"""Per team and pool metrics of a scheduling pass (dimensions `team` and `pool`, as the per-pool
metrics have `pool`), from the team measures of the pass summary (service/team_measures.py):

* TeamInUse: instances the team's live jobs hold;
* TeamBorrowed: instances it holds beyond its quota;
* TeamPending: its pending jobs the pass saw, capped by the fronts the pass read (so a lower bound of
  the team's queue; GET /quotas counts them exactly when asked);
* TeamWaitTime: the longest wait among those jobs, in seconds (from submission, or from the end
  of the last attempt); only while the team has some.

Nothing is emitted without quotas (the pass measures no teams then). The unassigned group is the
team `(unassigned)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

if TYPE_CHECKING:
    from smq_lambda.pass_summary import PassSummary


def record_team_metrics(summary: PassSummary | None, namespace: str) -> None:
    """One EMF record per team and pool, written at once."""
    for measure in summary.teams if summary is not None else ():
        metrics = EphemeralMetrics(namespace=namespace, service="smq")
        metrics.add_dimension(name="team", value=measure.team)
        metrics.add_dimension(name="pool", value=measure.pool)
        metrics.add_metric(name="TeamInUse", unit=MetricUnit.Count, value=measure.in_use)
        metrics.add_metric(name="TeamBorrowed", unit=MetricUnit.Count, value=measure.borrowed)
        metrics.add_metric(name="TeamPending", unit=MetricUnit.Count, value=measure.pending)
        if measure.longest_wait_s is not None:
            metrics.add_metric(name="TeamWaitTime", unit=MetricUnit.Seconds, value=measure.longest_wait_s)
        metrics.flush_metrics()
