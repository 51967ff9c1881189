"""Where one simulated job's training stands: progress, checkpoints, interruptions to come, and
how fast it trains where it runs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import SPOT_POOL_SUFFIX
from smq_lambda.replay.trace_job import TraceJob


@dataclass
class Progress:
    """Where one job's training stands. `epoch` changes whenever training starts or stops, so an
    event scheduled for an earlier stretch of training is recognised as stale.

    Progress (`kept`, checkpoints) counts seconds of the job's `duration_s`, its first preference's:
    a flexible job trains at `rate` of them per second, its placement's duration over that one, so
    a job resumed at another placement keeps the same share of its work. A trainer saves every so
    many steps, so on a slower placement its checkpoints come later by the clock."""

    trace: TraceJob
    kept: float = 0.0
    training_since: float | None = None
    trained: float = 0.0
    interruptions: list[float] = field(default_factory=list)
    epoch: int = 0
    pending_since: float | None = None
    waited: float = 0.0
    rate: float = 1.0
    """Seconds of `trace.duration_s` done per second of training at the current placement."""
    on_spot: bool = False
    """The attempt runs on spot: only then does SageMaker interrupt it (`trace.interruptions_s`)."""

    def at(self, now: float) -> float:
        return self.kept + ((now - self.training_since) * self.rate if self.training_since is not None else 0.0)

    def saved(self, progress: float) -> float:
        every = self.trace.checkpoint_every_s
        return math.floor(progress / every) * every if every else 0.0


def training_rate(trace: TraceJob, placement: Placement | None) -> float:
    """How fast `trace`'s job trains at `placement` (domain/placements/placement.py), in seconds of its
    `duration_s` per second (`Progress.rate`): 1 for a pinned job, slower where its preference
    trains longer. A job with nothing left to train (a replay of a job already due) trains at 1."""
    if placement is None:
        return 1.0
    spot_pool = placement.pool.endswith(SPOT_POOL_SUFFIX)
    duration = trace.duration_at(placement.instance_type if spot_pool else placement.pool_name, placement.count)
    if duration == trace.duration_s or duration <= 0:
        return 1.0
    return trace.duration_s / duration
