"""Where one simulated job's training stands: progress, checkpoints, interruptions to come."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from smq_lambda.replay.trace_job import TraceJob


@dataclass
class Progress:
    """Where one job's training stands. `epoch` changes whenever training starts or stops, so an
    event scheduled for an earlier stretch of training is recognised as stale."""

    trace: TraceJob
    kept: float = 0.0
    training_since: float | None = None
    trained: float = 0.0
    interruptions: list[float] = field(default_factory=list)
    epoch: int = 0
    pending_since: float | None = None
    waited: float = 0.0

    def at(self, now: float) -> float:
        return self.kept + (now - self.training_since if self.training_since is not None else 0.0)

    def saved(self, progress: float) -> float:
        every = self.trace.checkpoint_every_s
        return math.floor(progress / every) * every if every else 0.0
