"""What a simulation measures, integrated over virtual time between events (nothing changes between
two events, so every meter is exact, not sampled).

Per pool:

- `utilization`: instance-seconds held by attempts (starting, training, restarting after a spot
  interruption, stopping) over capacity × makespan.
- `goodput`: instance-seconds of training that was kept (not lost to a stop or an interruption)
  over capacity × makespan.
- `utilization_while_waiting`: 1 − idle-while-runnable / contended capacity. Contended capacity is
  capacity × the time the pool had pending work; idle-while-runnable counts the pool's free
  instances at the moments when some pending job needing the pool would fit in the free instances
  (of every pool it needs). So 1.0 means no accelerator of the pool ever stood idle while work it
  could run waited; 0.9 means a tenth of the contended capacity did. 1.0 when the pool never had
  pending work. A flexible job waits in the pool of every placement it prefers, and would fit in
  its first placement that fits (the one the pass would choose).

Inversion: a pending job H is inverted while it could start if lower-priority jobs were stopped
and nothing else could give it room: walking the pending jobs in queue order, each takes free and
releasing instances if they are enough (it only waits for stops in flight or the next pass),
else it is inverted if those plus the instances of not-yet-claimed starting or running jobs of
strictly lower priority are enough (it claims them, lowest priority first), else it waits behind
work of its own priority or higher, which is no inversion. `inversion_s` sums the time over the
inverted jobs; `inversion_max_s` is the longest single stretch one job stayed inverted. A flexible
job takes the first placement that fits, else is inverted at the first that lower-priority jobs
would make fit.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import LIVE_STATES, RELEASING_STATES, JobState
from smq_lambda.replay.virtual_queue import fits


@dataclass(frozen=True)
class Moment:
    """The queue between two events, as the meters see it."""

    capacity: Mapping[str, int]
    held: Mapping[str, int]
    """Instances held per pool: live attempts plus closed attempts still stopping."""
    releasing: Mapping[str, int]
    """Of those, instances whose stop was sent."""
    pending: Sequence[Job]
    """In queue order."""
    reclaimable: Sequence[Job]
    """Starting or running jobs no stop was sent to."""

    def free(self, pool: str) -> int:
        return self.capacity.get(pool, 0) - self.held.get(pool, 0)

    @classmethod
    def of(cls, capacity: Mapping[str, int], outside: Mapping[str, int], jobs: Iterable[Job]) -> Moment:
        """The moment of a simulation's `jobs` (every state) with the instances held `outside` the
        queue (a spot attempt falling back to on-demand, on their way back)."""
        held, releasing = Counter(outside), Counter(outside)
        pending: list[Job] = []
        reclaimable: list[Job] = []
        for job in jobs:
            if job.state in LIVE_STATES:
                held.update(job.demand)
            if job.state in RELEASING_STATES:
                releasing.update(job.demand)
            if job.state is JobState.PENDING:
                pending.append(job)
            elif job.state in (JobState.STARTING, JobState.RUNNING):
                reclaimable.append(job)
        return cls(capacity, held, releasing, sorted(pending, key=lambda job: job.order), reclaimable)


def demands(job: Job) -> list[Mapping[str, int]]:
    """What a pending job could hold, in its order: each placement of a flexible job, else its demand."""
    return [placement.demand for placement in job.placements] or [job.demand]


def runnable_pools(moment: Moment) -> set[str]:
    """Pools with a pending job that would fit in the free instances now (at its first placement
    that fits)."""
    free = {pool: moment.free(pool) for pool in moment.capacity}
    pools: set[str] = set()
    for job in moment.pending:
        fitting = next((demand for demand in demands(job) if fits(demand, free)), None)
        if fitting is not None:
            pools.update(fitting)
    return pools


def inverted_jobs(moment: Moment) -> list[str]:
    """The pending jobs in inversion now (see the module docstring)."""
    available = Counter({pool: moment.free(pool) + moment.releasing.get(pool, 0) for pool in moment.capacity})
    unclaimed = sorted(moment.reclaimable, key=lambda job: (job.priority, job.name))
    inverted: list[str] = []
    for job in moment.pending:
        fitting = next((demand for demand in demands(job) if fits(demand, available)), None)
        if fitting is not None:
            available.subtract(fitting)
            continue
        lower = [other for other in unclaimed if other.priority < job.priority]
        reachable = Counter(available)
        for other in lower:
            reachable.update(other.demand)
        wanted = next((demand for demand in demands(job) if fits(demand, reachable)), None)
        if wanted is None:
            continue
        inverted.append(job.name)
        for other in lower:
            if fits(wanted, available):
                break
            available.update(other.demand)
            unclaimed.remove(other)
        available.subtract(wanted)
    return inverted


@dataclass
class PoolMeter:
    capacity: int
    held_s: float = 0.0
    kept_training_s: float = 0.0
    contended_s: float = 0.0
    idle_runnable_s: float = 0.0

    def report(self, makespan: float) -> dict[str, Any]:
        capacity_s = self.capacity * makespan
        contended = self.capacity * self.contended_s
        return {
            "capacity": self.capacity,
            "utilization": _share(self.held_s, capacity_s),
            "goodput": _share(self.kept_training_s, capacity_s),
            "utilization_while_waiting": 1.0 - _share(self.idle_runnable_s, contended) if contended else 1.0,
            "contended_s": round(self.contended_s, 3),
            "idle_while_runnable_instance_s": round(self.idle_runnable_s, 3),
        }


@dataclass
class Meters:
    """Accumulates the time-integrated figures while the engine advances the clock."""

    pools: dict[str, PoolMeter]
    inversion_s: float = 0.0
    inversion_max_s: float = 0.0
    inverted_since: dict[str, float] = field(default_factory=dict)

    @classmethod
    def for_pools(cls, capacity: Mapping[str, int]) -> Meters:
        return cls({pool: PoolMeter(count) for pool, count in capacity.items()})

    def observe(self, moment: Moment, start: float, end: float) -> None:
        """Integrate `moment` over [start, end)."""
        span = end - start
        runnable = runnable_pools(moment)
        waiting = {pool for job in moment.pending for demand in demands(job) for pool in demand}
        for pool, meter in self.pools.items():
            meter.held_s += span * moment.held.get(pool, 0)
            if pool in waiting:
                meter.contended_s += span
            if pool in runnable:
                meter.idle_runnable_s += span * max(moment.free(pool), 0)
        self._track_inversions(set(inverted_jobs(moment)), start)
        self.inversion_s += span * len(self.inverted_since)

    def _track_inversions(self, inverted: set[str], now: float) -> None:
        for name in list(self.inverted_since):
            if name not in inverted:
                self._close(name, now)
        for name in inverted:
            self.inverted_since.setdefault(name, now)

    def _close(self, name: str, now: float) -> None:
        self.inversion_max_s = max(self.inversion_max_s, now - self.inverted_since.pop(name))

    def keep_training(self, demand: Mapping[str, int], seconds: float) -> None:
        """`seconds` of training on `demand` were kept (the job completed or saved them)."""
        for pool, count in demand.items():
            if pool in self.pools:
                self.pools[pool].kept_training_s += count * seconds

    def finish(self, now: float) -> None:
        for name in list(self.inverted_since):
            self._close(name, now)


def percentiles(values: Iterable[float]) -> dict[str, float | int]:
    """p50, p95 (nearest rank) and max of `values`, and how many there were."""
    ordered = sorted(values)
    if not ordered:
        return {"jobs": 0, "p50": 0.0, "p95": 0.0, "max": 0.0}
    return {
        "jobs": len(ordered),
        "p50": round(_rank(ordered, 0.50), 3),
        "p95": round(_rank(ordered, 0.95), 3),
        "max": round(ordered[-1], 3),
    }


def _rank(ordered: Sequence[float], quantile: float) -> float:
    return ordered[max(math.ceil(quantile * len(ordered)) - 1, 0)]


def _share(part: float, whole: float) -> float:
    return round(part / whole, 6) if whole else 0.0
