"""Warm pools in a simulation: the instances a completed job keeps warm (its trace line's
`keep_alive_s`, at most the keep-alive smq's pass sent: `StartJob.keep_alive_s`), held in its pool
and billed until its keep-alive ends, the pass ends it (`Decision.warm_releases`), or a matching
job starts on it. Only a completed attempt leaves one. Reported (under "warm_pools") when the trace
gives keep-alives:

- `retained`: warm pools left; `reused`: of those, started on by a matching job; `reuse_rate`:
  reused ÷ retained; `released`: ended by the pass for a job ahead of every match;
- `idle_hours`: instance-hours held warm: from the end of the job that left the pool to its reuse,
  its release or the end of its keep-alive (a pool still warm when the run ends counts to the end
  of its keep-alive: SageMaker bills it). Warm instances train nothing: the pools' utilization does
  not count them, and a job waiting for their pool sees them as idle;
- `reused_hours`: instance-hours of the attempts that started on a warm pool (start to end): the
  work the kept capacity went to; `idle_to_reused`: idle_hours ÷ reused_hours (issue 20's target:
  at most 0.05);
- `startup_saved_s`: the start-up those attempts skipped (a start on a warm pool is ready at once;
  the engine still draws its start-up, so a run's other draws are those of a run without reuse).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from smq_lambda.domain.warm.warm_pools import WarmPool

HOUR_S = 3600.0


@dataclass(frozen=True)
class HeldWarmPool:
    warm: WarmPool
    since_s: float
    """When the job that left it ended."""
    until_s: float
    """When its keep-alive ends."""


class WarmPools:
    """The warm pools of one run, and what they cost and saved."""

    def __init__(self) -> None:
        self.held: dict[str, HeldWarmPool] = {}
        """By the training job that left it."""
        self.on_warm: dict[tuple[str, int], int] = {}
        """Attempts (job, number) started on a warm pool, and their instances."""
        self.retained = 0
        self.reused = 0
        self.released = 0
        self.idle_instance_s = 0.0
        self.reused_instance_s = 0.0
        self.startup_saved_s = 0.0

    def available(self) -> tuple[WarmPool, ...]:
        return tuple(held.warm for held in self.held.values())

    def demand(self) -> Counter[str]:
        """Instances held warm, per pool."""
        held: Counter[str] = Counter()
        for each in self.held.values():
            held.update(each.warm.demand)
        return held

    def left(self, warm: WarmPool, now_s: float, until_s: float) -> None:
        self.held[warm.training_job_name] = HeldWarmPool(warm, now_s, until_s)
        self.retained += 1

    def reused_by(self, attempt: tuple[str, int], held: HeldWarmPool, now_s: float) -> None:
        """An attempt started on `held` (taken out of `self.held` already) at `now_s`."""
        self._idle(held, now_s)
        self.reused += 1
        self.on_warm[attempt] = held.warm.count

    def release(self, training_job_name: str) -> bool:
        """The pass ends a warm pool: its instances are on their way back; False when none is held."""
        held = self.held.get(training_job_name)
        if held is None or held.warm.released:
            return False
        self.held[training_job_name] = replace(held, warm=replace(held.warm, released=True))
        self.released += 1
        return True

    def ended(self, training_job_name: str, now_s: float) -> bool:
        """SageMaker ended a warm pool (its keep-alive ran out, or a release landed); False when it
        was reused or ended already."""
        held = self.held.pop(training_job_name, None)
        if held is None:
            return False
        self._idle(held, now_s)
        return True

    def attempt_ended(self, attempt: tuple[str, int], start_s: float, end_s: float) -> None:
        count = self.on_warm.pop(attempt, 0)
        self.reused_instance_s += count * (end_s - start_s)

    def _idle(self, held: HeldWarmPool, now_s: float) -> None:
        self.idle_instance_s += held.warm.count * (min(now_s, held.until_s) - held.since_s)

    def report(self) -> dict[str, Any]:
        """The figures of the module docstring; the pools still warm count to their keep-alive's end."""
        idle_s = self.idle_instance_s + sum(
            held.warm.count * (held.until_s - held.since_s) for held in self.held.values()
        )
        idle_hours, reused_hours = idle_s / HOUR_S, self.reused_instance_s / HOUR_S
        return {
            "retained": self.retained,
            "reused": self.reused,
            "reuse_rate": round(self.reused / self.retained, 6) if self.retained else 0.0,
            "released": self.released,
            "idle_hours": round(idle_hours, 6),
            "reused_hours": round(reused_hours, 6),
            "idle_to_reused": round(idle_hours / reused_hours, 6) if reused_hours else None,
            "startup_saved_s": round(self.startup_saved_s, 3),
        }
