"""What a scheduling pass asks the edges to do. Every action carries the reason a person can read."""

from __future__ import annotations

from dataclasses import dataclass

from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.placements.placement import Placement


@dataclass(frozen=True)
class StartJob:
    """Create attempt `attempt` of a pending job (pending → starting)."""

    job_name: str
    attempt: int
    reason: str
    backfill: bool = False
    placement: Placement | None = None
    """Where the job starts: the one placement the pass chose (pool, type and count, purchase option,
    training plan, the warm pool it starts on), which the attempt records; None only for a job of
    instance groups."""
    keep_alive_s: int | None = None
    """The most KeepAlivePeriodInSeconds its request may keep (0: none); None: as submitted
    (scheduling/warm_pools.py decides it)."""

    @property
    def warm_pool(self) -> str | None:
        """The training job whose warm pool it starts on (in its placement); None: it starts cold."""
        return None if self.placement is None else self.placement.warm_pool


@dataclass(frozen=True)
class PreemptJob:
    """Stop the live attempt of a job and queue it again (→ preempting): to make room for `for_job`,
    or, with `outcome` PLAN_WINDOW_CLOSED, before the window of the training plan whose pool
    `for_job` names ends (scheduling/plan_stops.py)."""

    job_name: str
    attempt: int
    for_job: str
    reason: str
    history: str | None = None
    """A note for the job's history, when this stop changes how it is treated from now on."""
    outcome: AttemptOutcome = AttemptOutcome.PREEMPTED
    """How the attempt closes when the stop lands. Only PREEMPTED counts towards `max_preemptions`:
    a stop for a plan window is the plan's schedule, not a job of higher priority."""


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
