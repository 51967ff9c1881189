"""Spot and on demand in a simulation. The engine's interruptions feed a book of spot interruptions
per instance type, as SageMaker's reports feed the service's (domain/placements/spot_rates.py), so smq's pass
sees each type's decayed rate (`Snapshot.spot_rates`) when the `spot` section is adaptive.

Reported (under "purchase") when a trace line gives `purchase`:

- `spot_share`: instance-hours on spot ÷ all instance-hours of the jobs that allow spot (every
  attempt, start to end: start-up and stops included);
- `on_demand_starts`: starts on demand of jobs that allow spot (the pass's purchase rule: a spot
  wait, or its type's interruption rate);
- `fallbacks`: interrupted spot jobs the governance rules moved on demand (also `spot_fallbacks`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from smq_lambda.domain.config.spot_document import SpotSection
from smq_lambda.domain.placements.spot_rates import SpotInterruptions, rates, with_interruptions
from smq_lambda.replay.trace_job import TraceJob


class PurchaseMeter:
    """The interruptions per type the pass sees, and where the spot jobs of a run ran."""

    def __init__(self, trace: Iterable[TraceJob], spot: SpotSection | None) -> None:
        jobs = list(trace)
        self.reported = any(job.purchase is not None for job in jobs)
        self.spot_jobs = frozenset(job.name for job in jobs if job.is_spot)
        self.adaptive = spot.adaptive if spot is not None else None
        self.book = SpotInterruptions()
        self.interrupted: dict[str, int] = {}
        """Per attempt (its training job name), its interruptions so far."""
        self.on_spot: dict[tuple[str, int], bool] = {}
        """Per open attempt (job, number) of a spot job, whether it runs on spot."""
        self.spot_instance_s = 0.0
        self.all_instance_s = 0.0
        self.on_demand_starts = 0

    def rates(self, now: datetime) -> dict[str, float]:
        """Each type's interruptions per hour at `now`, when the pass reads them (an adaptive section)."""
        if self.adaptive is None:
            return {}
        return rates(self.book, now, self.adaptive.half_life_s)

    def interrupted_at(self, training_job_name: str, instance_type: str, now: datetime) -> None:
        count = self.interrupted.get(training_job_name, 0) + 1
        self.interrupted[training_job_name] = count
        self.book = with_interruptions(self.book, training_job_name, instance_type, count, now) or self.book

    def started(self, attempt: tuple[str, int], on_spot: bool) -> None:
        if attempt[0] not in self.spot_jobs:
            return
        self.on_spot[attempt] = on_spot
        self.on_demand_starts += not on_spot

    def ended(self, attempt: tuple[str, int], instances: int, seconds: float) -> None:
        on_spot = self.on_spot.pop(attempt, None)
        if on_spot is None:
            return
        self.all_instance_s += instances * seconds
        self.spot_instance_s += instances * seconds if on_spot else 0.0

    def report(self, fallbacks: int) -> dict[str, Any]:
        share = self.spot_instance_s / self.all_instance_s if self.all_instance_s else 0.0
        return {"spot_share": round(share, 6), "on_demand_starts": self.on_demand_starts, "fallbacks": fallbacks}
