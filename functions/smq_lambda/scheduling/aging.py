"""Anti-starvation: a pending job's priority rises with its wait, up to a cap (off by default).

The boost is whole points: `floor(hours waited × per_hour)`, at most `cap`. The wait counts from
submission, or from the end of the job's last attempt (a preempted job ages again from when it
stopped, not from when it was first submitted). Only pending jobs age: a running job keeps its
priority, so an aged job may preempt a running job it now outranks, as any higher-priority job
may. The reason names the points and the moment the wait began, both fixed between points
(never the hours waited, which change on every pass): each point the job gains changes its written
reason once, so aging costs at most `cap` writes per wait.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime

from smq_lambda.domain.config.teams import Aging
from smq_lambda.domain.jobs.model import Job
from smq_lambda.scheduling.features import Feature, PassInputs
from smq_lambda.scheduling.reasons import timestamp


@dataclass(frozen=True)
class Boost:
    """How much a job aged: `points` added to its own `priority` for waiting since `since`."""

    priority: int
    points: int
    since: datetime

    def describe(self) -> str:
        return f"priority {self.priority} + {self.points} for waiting since {timestamp(self.since)} (aging)"


def waiting_since(job: Job) -> datetime:
    attempt = job.current_attempt
    if attempt is not None and attempt.ended_at is not None:
        return max(attempt.ended_at, job.submitted_at)
    return job.submitted_at


def boost(job: Job, now: datetime, aging: Aging) -> Boost | None:
    """The boost `job` has earned at `now`; None when it has none."""
    if not aging.enabled:
        return None
    since = waiting_since(job)
    hours = max((now - since).total_seconds(), 0.0) / 3600
    points = min(math.floor(hours * aging.per_hour), aging.cap)
    return Boost(job.priority, points, since) if points > 0 else None


def aged(jobs: list[Job], now: datetime, aging: Aging) -> tuple[list[Job], dict[str, Boost]]:
    """`jobs` with each boost added to its priority (for ordering and preemption), and the boosts
    by job name (for the reasons)."""
    boosts: dict[str, Boost] = {}
    result = []
    for job in jobs:
        earned = boost(job, now, aging)
        if earned is None:
            result.append(job)
        else:
            boosts[job.name] = earned
            result.append(replace(job, priority=job.priority + earned.points))
    return result, boosts


class AgingFeature(Feature):
    """Aging in the pass: the pending jobs in queue order by their aged priority, each boosted job's
    reasons ending with its boost."""

    def prepare(self, inputs: PassInputs) -> PassInputs:
        pending, boosts = aged(inputs.pending, inputs.now, inputs.config.aging)
        pending.sort(key=lambda job: job.order)
        suffixes = {name: earned.describe() for name, earned in boosts.items()}
        return replace(inputs, pending=pending, suffixes={**inputs.suffixes, **suffixes})
