"""How right the start estimates were, as metrics: one value per job a pass started that had been
given an estimate (service/start_estimates.py measures them, forecast/accuracy.py says how).

* StartEstimateErrorShare: |start - estimated likely start| / actual wait (from the estimate to the
  start); its median (p50) is the issue-24 figure, target ≤ 0.25;
* StartWithinBand: 1 when the start fell within the estimate's band (30 s of slack each side), else
  0; its average is the share of jobs that did, target ≥ 0.8;
* StartWithin1Min, StartWithin10Min: 1 when the start came that close to the likely start, else 0:
  the HPC literature's figures (forecast/accuracy.py NEAR_S).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from smq_lambda.forecast.accuracy import NEAR_S, StartAccuracy


def record_estimate_metrics(accuracy: Sequence[StartAccuracy], namespace: str) -> None:
    """One EMF record with every started job's figures; nothing when none was estimated."""
    if not accuracy:
        return
    metrics = EphemeralMetrics(namespace=namespace, service="smq")
    for measured in accuracy:
        metrics.add_metric(name="StartEstimateErrorShare", unit=MetricUnit.NoUnit, value=measured.error_share)
        metrics.add_metric(name="StartWithinBand", unit=MetricUnit.Count, value=int(measured.within_band))
        for seconds in NEAR_S:
            name = f"StartWithin{round(seconds / 60)}Min"
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=int(measured.within(seconds)))
    metrics.flush_metrics()
