"""What a scheduling pass asks the edges to do. Every action carries the reason a person can read."""

from __future__ import annotations

from dataclasses import dataclass

from smq_lambda.domain.placement import Placement


@dataclass(frozen=True)
class StartJob:
    """Create attempt `attempt` of a pending job (pending → starting)."""

    job_name: str
    attempt: int
    reason: str
    backfill: bool = False
    placement: Placement | None = None
    """Where a flexible job starts (the placement phase chose it); None for a pinned job."""
    keep_alive_s: int | None = None
    """The most KeepAlivePeriodInSeconds its request may keep (0: none); None: as submitted
    (scheduling/warm_pools.py decides it)."""
    warm_pool: str | None = None
    """The training job whose warm pool it starts on (scheduling/warm_pools.py); None: none."""


@dataclass(frozen=True)
class PreemptJob:
    """Stop the live attempt of a job to make room for `for_job` (→ preempting)."""

    job_name: str
    attempt: int
    for_job: str
    reason: str
    history: str | None = None
    """A note for the job's history, when this preemption changes how it is treated from now on."""


@dataclass(frozen=True)
class ExplainWait:
    """Record why a pending job is still waiting (only emitted when the reason changed)."""

    job_name: str
    reason: str


@dataclass(frozen=True)
class ReleaseWarmPool:
    """End the warm pool the training job `training_job_name` left (UpdateTrainingJob with
    KeepAlivePeriodInSeconds 0): a job ahead of any that matches it needs its instances. Not a job's
    action: a pass returns these beside its actions (`Decision.warm_releases`)."""

    training_job_name: str
    reason: str


Action = StartJob | PreemptJob | ExplainWait
