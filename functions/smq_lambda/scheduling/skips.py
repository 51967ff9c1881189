"""The rule that sets a pending job aside before the pass orders anything: a job that cannot start
now whatever the other jobs do is explained and blocks nothing. The pass applies it, and the API
calls it again to tell whether a waiting job's stored reason is one the pass wrote for it (so it
shows that reason rather than the job's place in its pool)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.model import Job


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
    small for the job does not grow."""
    for pool, count in job.demand.items():
        held = capacity(pool)
        if held is not None and count > held:
            return TooLarge(pool)
    if job.not_before is not None and job.not_before > now:
        return InBackoff(job.not_before)
    return None
