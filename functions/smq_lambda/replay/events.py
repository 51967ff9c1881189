"""What moves a simulation's clock: the kinds of events, and how long SageMaker takes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


@dataclass(frozen=True)
class Timing:
    """How long SageMaker takes: an attempt's instances are ready, and an interrupted spot job
    trains again, a uniform draw from [start_min_s, start_max_s] after the start."""

    start_min_s: float = 120.0
    start_max_s: float = 300.0
    pass_delay_s: float = 0.0
    seed: int = 0


DEFAULT_TIMING = Timing()


class Event(IntEnum):
    """Kinds of events; at one moment they are handled in this order, then the pass runs."""

    STOPPED = 0
    RELEASED = 1
    WARM_ENDED = 2
    """A warm pool's keep-alive ran out, or the queue ended it (simulation/warm_pools.py)."""
    COMPLETED = 3
    INTERRUPTED = 4
    READY = 5
    RESUMED = 6
    SUBMITTED = 7
    PASS = 8
