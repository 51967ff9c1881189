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


Action = StartJob | PreemptJob | ExplainWait
