"""A pending job at one placement: what the walk decides and what a verdict is about.

A pinned job is one candidate, at its own placement (none for instance groups); a flexible job is
one candidate per preference the gates let through, and the placement phase hands the walk the
one it chose. The candidate carries that placement to the start (`StartJob.placement`), so no
phase rewrites the job to stand somewhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.placements.placement import Placement


@dataclass(frozen=True, eq=False)
class Candidate:
    """`job` at `placement`. Compared by identity: the pass's heads are the candidates it walked."""

    job: Job
    placement: Placement | None
    """Where it would start: a flexible job's preference, a pinned job's own placement, or None
    (instance groups)."""
    index: int = 0
    """Its preference's position among the job's, from 1; 0 for a pinned job."""

    @classmethod
    def pinned(cls, job: Job) -> Candidate:
        return cls(job, job.own_placement)

    @property
    def demand(self) -> Mapping[str, int]:
        """Instances per pool it needs here: its preference's, or a pinned job's own."""
        return self.placement.demand if self.index and self.placement else self.job.demand

    @property
    def warm_key(self) -> str | None:
        """The warm-pool matching digest of its request as started here."""
        return self.placement.warm_key if self.index and self.placement else self.job.warm_key

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def team(self) -> str | None:
        return self.job.team

    @property
    def priority(self) -> int:
        return self.job.priority

    @property
    def order(self) -> tuple[int, datetime, str]:
        return self.job.order

    @property
    def reason(self) -> str | None:
        return self.job.reason
