"""What happened on which instance: one segment per attempt, placed on numbered instance slots of
its pool, so a Gantt chart (one row per slot) and users' own plots can be drawn from it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

TIMELINE_COLUMNS = (
    "job",
    "attempt",
    "team",
    "priority",
    "pool",
    "slot",
    "start_s",
    "running_s",
    "stop_s",
    "end_s",
    "outcome",
    "lost_work_s",
    "interruptions_s",
    "backfill",
)


@dataclass
class Segment:
    """One attempt: started (`start_s`), instances ready and training (`running_s`), stop sent
    (`stop_s`: preemption or spot fallback), instances given back (`end_s`)."""

    job: str
    attempt: int
    team: str | None
    priority: int
    pool: str
    slots: tuple[int, ...]
    start_s: float
    backfill: bool = False
    running_s: float | None = None
    stop_s: float | None = None
    end_s: float | None = None
    outcome: str | None = None
    lost_work_s: float = 0.0
    interruptions: list[float] = field(default_factory=list)

    def rows(self) -> list[dict[str, object]]:
        """One row per instance slot, with TIMELINE_COLUMNS."""
        return [
            {
                "job": self.job,
                "attempt": self.attempt,
                "team": self.team or "",
                "priority": self.priority,
                "pool": self.pool,
                "slot": slot,
                "start_s": _seconds(self.start_s),
                "running_s": _seconds(self.running_s),
                "stop_s": _seconds(self.stop_s),
                "end_s": _seconds(self.end_s),
                "outcome": self.outcome or "",
                "lost_work_s": _seconds(self.lost_work_s),
                "interruptions_s": " ".join(_seconds(moment) for moment in self.interruptions),
                "backfill": self.backfill,
            }
            for slot in self.slots
        ]


class Slots:
    """Numbered instances per pool; an attempt takes the lowest free numbers and gives them back
    when its instances are released."""

    def __init__(self, pools: Mapping[str, int]) -> None:
        self._free = {pool: list(range(count)) for pool, count in pools.items()}

    def take(self, pool: str, count: int) -> tuple[int, ...]:
        free = self._free[pool]
        taken, self._free[pool] = free[:count], free[count:]
        return tuple(taken)

    def give_back(self, pool: str, slots: Iterable[int]) -> None:
        self._free[pool] = sorted([*self._free[pool], *slots])


def _seconds(value: float | None) -> str:
    return "" if value is None else str(round(value, 3))
