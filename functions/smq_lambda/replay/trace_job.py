"""A job to replay in virtual time: when it arrives, what it needs, how long it trains, how it
checkpoints, when SageMaker interrupts it, and the MaxRuntimeInSeconds its request gives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_STOP_S = 60.0


@dataclass(frozen=True)
class TraceJob:
    """One job of a workload, as a trace line gives it (simulation/trace.py reads and checks them)."""

    name: str
    submit_s: float
    priority: int
    pool: str
    instances: int
    duration_s: float
    team: str | None = None
    checkpoint_every_s: float | None = None
    stop_s: float = DEFAULT_STOP_S
    interruptions_s: tuple[float, ...] = field(default=())
    max_runtime_s: int | None = None
    """The request's MaxRuntimeInSeconds (None: it gives none), the ceiling start estimates fall
    back on."""
    line: int = field(default=0, compare=False)
    """Where the job came from in its trace file (0: built, not read)."""

    @property
    def is_spot(self) -> bool:
        return bool(self.interruptions_s)

    def to_json(self) -> dict[str, Any]:
        """The trace line of this job, without the members at their defaults."""
        line: dict[str, Any] = {
            "name": self.name,
            "submit_s": self.submit_s,
            "priority": self.priority,
            "pool": self.pool,
            "instances": self.instances,
            "duration_s": self.duration_s,
        }
        if self.team is not None:
            line["team"] = self.team
        if self.checkpoint_every_s is not None:
            line["checkpoint_every_s"] = self.checkpoint_every_s
        if self.stop_s != DEFAULT_STOP_S:
            line["stop_s"] = self.stop_s
        if self.interruptions_s:
            line["interruptions_s"] = list(self.interruptions_s)
        if self.max_runtime_s is not None:
            line["max_runtime_s"] = self.max_runtime_s
        return line
