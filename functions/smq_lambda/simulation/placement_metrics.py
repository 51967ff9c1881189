"""What a simulation measures of placement, reported (under "placement") when its trace has
flexible jobs (a trace line's `preferences`):

- `flexible_jobs`: how many; `started_elsewhere`: the share of those that started that first
  started at a later preference than their first (the queue used the room of another type);
- `flexible_wait_s`: their waits (p50, p95, max);
- `selected`: per flexible job, the instance type of its last attempt (where it completed, or
  where it last ran).

Utilization while waiting counts a flexible job as waiting in every pool it prefers
(simulation/metrics.py). Goodput counts each stretch of kept training in the pool it was done in,
at that placement's speed (`KeptWork`), so a job preempted on one type and completed on another
counts in both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from smq_lambda.domain.placements.placement import Placement
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.simulation.metrics import percentiles

Place = tuple[tuple[tuple[str, int], ...], float]
"""Where training was done: the demand held (pool, instances) and the rate (replay/progress.py)."""


class KeptWork:
    """Per job, the training kept at each place before the attempt now running, in seconds of the
    job's `duration_s`."""

    def __init__(self) -> None:
        self._kept: dict[str, dict[Place, float]] = {}

    def checkpointed(self, name: str, demand: Mapping[str, int], rate: float, before: float, after: float) -> None:
        """An attempt at `demand` and `rate` stopped with `after` of the job kept (it started from
        `before`); nothing kept means every earlier stretch was lost too."""
        if after <= 0.0:
            self._kept.pop(name, None)
            return
        kept = self._kept.setdefault(name, {})
        place = (tuple(demand.items()), rate)
        kept[place] = kept.get(place, 0.0) + after - before

    def completed(
        self, name: str, demand: Mapping[str, int], rate: float, duration_s: float
    ) -> list[tuple[Mapping[str, int], float]]:
        """The seconds of training kept on each demand by a job that completes at `demand` and
        `rate`: what other places kept, and the rest of its `duration_s` here."""
        here = (tuple(demand.items()), rate)
        elsewhere = {place: work for place, work in self._kept.pop(name, {}).items() if place != here}
        remaining = duration_s - sum(elsewhere.values())
        return [(dict(held), work / speed) for (held, speed), work in elsewhere.items()] + [(demand, remaining / rate)]


class PlacementMeter:
    """Where the flexible jobs of a run started and ran."""

    def __init__(self, trace: Iterable[TraceJob]) -> None:
        self.flexible = frozenset(job.name for job in trace if job.alternatives)
        self.first_preference: dict[str, int] = {}
        """Per flexible job that started, the preference (from 1) of its first start."""
        self.selected: dict[str, str] = {}

    def started(self, name: str, placements: tuple[Placement, ...], placement: Placement | None) -> None:
        if name not in self.flexible or placement is None:
            return
        self.first_preference.setdefault(name, _preference_of(placements, placement))
        self.selected[name] = placement.instance_type

    def report(self, waits: Mapping[str, float]) -> dict[str, Any]:
        started = self.first_preference.values()
        elsewhere = sum(index > 1 for index in started)
        return {
            "flexible_jobs": len(self.flexible),
            "started_elsewhere": round(elsewhere / len(started), 6) if started else 0.0,
            "flexible_wait_s": percentiles(waits[name] for name in sorted(self.flexible)),
            "selected": {name: self.selected[name] for name in sorted(self.selected)},
        }


def _preference_of(placements: tuple[Placement, ...], placement: Placement) -> int:
    """Which preference (from 1) `placement` is: its type, count and plan; a purchase option or a
    warm pool taken there is still that preference."""
    where = (placement.instance_type, placement.count, placement.training_plan_arn)
    return next(
        index
        for index, preference in enumerate(placements, start=1)
        if (preference.instance_type, preference.count, preference.training_plan_arn) == where
    )
