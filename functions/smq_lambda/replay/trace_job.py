"""A job to replay in virtual time: when it arrives, what it needs (one pool, or preferences in
order), how long it trains, how it checkpoints, when SageMaker interrupts it, the
MaxRuntimeInSeconds its request gives, its purchase options and the warm pool it keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_STOP_S = 60.0


@dataclass(frozen=True)
class TracePreference:
    """One place a flexible job may run, and how long it trains there (a slower type, longer)."""

    pool: str
    instances: int
    duration_s: float


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
    alternatives: tuple[TracePreference, ...] = ()
    """A flexible job's later preferences, in order: its first is `pool`, `instances` and
    `duration_s`. () for a pinned job (the same job pinned to its first preference)."""
    purchase: str | None = None
    """Its purchase option (domain/purchase.Purchase): "spot" (spot first, on demand allowed) or
    "spot_only"; None: on demand, unless `interruptions_s` makes it managed spot (as before traces
    gave purchase options)."""
    keep_alive_s: int = 0
    """The request's KeepAlivePeriodInSeconds: its instances stay warm that long after it ends."""
    warm_key: str | None = None
    """Jobs with the same key match each other's warm pools (SageMaker's matching criteria, in
    short); None: the job matches no other."""

    @property
    def is_spot(self) -> bool:
        return self.purchase is not None or bool(self.interruptions_s)

    @property
    def preferences(self) -> tuple[TracePreference, ...]:
        """A flexible job's preferences in order, its first included; () for a pinned job."""
        if not self.alternatives:
            return ()
        return (TracePreference(self.pool, self.instances, self.duration_s), *self.alternatives)

    def duration_at(self, pool: str, instances: int) -> float:
        """How long the job trains at the preference of `instances` in `pool`; `duration_s` at any
        place it does not prefer (a job the forecast replays knows only one duration)."""
        for preference in self.preferences:
            if (preference.pool, preference.instances) == (pool, instances):
                return preference.duration_s
        return self.duration_s

    def to_json(self) -> dict[str, Any]:
        """The trace line of this job, without the members at their defaults."""
        line: dict[str, Any] = {"name": self.name, "submit_s": self.submit_s, "priority": self.priority}
        if self.alternatives:
            line["preferences"] = [
                {"pool": preference.pool, "instances": preference.instances}
                | ({"duration_s": preference.duration_s} if preference.duration_s != self.duration_s else {})
                for preference in self.preferences
            ]
        else:
            line |= {"pool": self.pool, "instances": self.instances}
        line["duration_s"] = self.duration_s
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
        if self.purchase is not None:
            line["purchase"] = self.purchase
        if self.keep_alive_s:
            line["keep_alive_s"] = self.keep_alive_s
        if self.warm_key is not None:
            line["warm_key"] = self.warm_key
        return line
