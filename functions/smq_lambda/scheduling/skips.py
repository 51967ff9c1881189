"""The rule that sets a whole pending job aside: a job that cannot start now whatever the other jobs
do (too large for its pool, or in start backoff). The pass asks it first among its gates
(gates.py), which explain such a job; it then blocks nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.jobs.model import Job


@dataclass(frozen=True)
class TooLarge:
    """The job needs more of `pool` than the pool holds even when empty (the first such pool)."""

    pool: str


@dataclass(frozen=True)
class InBackoff:
    """A start of the job was refused; the job may try again at `until`."""

    until: datetime


Skip = TooLarge | InBackoff


def skip_rule(job: Job, now: datetime, capacity: Callable[[str], int | None]) -> Skip | None:
    """Why `job` cannot start at `now` whatever the others do, or None when it may. `capacity`: the
    instances a pool holds (None: unlimited). Too large is checked first: a backoff ends, a pool too
    small for the job does not grow. A flexible job is too large only when every placement it
    prefers is (the first one's pool is named)."""
    too_large = [_too_large(demand, capacity) for demand in _demands(job)]
    if all(too_large):
        return next(pool for pool in too_large if pool is not None)
    if job.not_before is not None and job.not_before > now:
        return InBackoff(job.not_before)
    return None


def _demands(job: Job) -> list[Mapping[str, int]]:
    return [placement.demand for placement in job.placements] or [job.demand]


def _too_large(demand: Mapping[str, int], capacity: Callable[[str], int | None]) -> TooLarge | None:
    for pool, count in demand.items():
        held = capacity(pool)
        if held is not None and count > held:
            return TooLarge(pool)
    return None
