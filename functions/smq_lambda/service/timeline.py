"""Which attempts a timeline of [start, end] draws: pure, over the jobs the store found for it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from smq_lambda.domain.model import Attempt, Job
from smq_lambda.errors import InvalidRequest
from smq_lambda.ports import JobStore

MAX_TIMELINE_DAYS = 7
"""How far back GET /attempts reaches: every day since `from` is one index Query."""


@dataclass(frozen=True)
class TimelineAttempt:
    job: Job
    attempt: Attempt


def overlaps(attempt: Attempt, start: datetime, end: datetime) -> bool:
    """Began by `end`, and still live or ended at or after `start`."""
    return attempt.started_at <= end and (attempt.ended_at is None or attempt.ended_at >= start)


def attempts_overlapping(jobs: Iterable[Job], start: datetime, end: datetime) -> list[TimelineAttempt]:
    """Every attempt of `jobs` overlapping [start, end], each once, in order of start (then job)."""
    found = {
        (job.name, job.job_id, attempt.number): TimelineAttempt(job, attempt)
        for job in jobs
        for attempt in job.attempts
        if overlaps(attempt, start, end)
    }
    return sorted(found.values(), key=lambda item: (item.attempt.started_at, item.job.name, item.attempt.number))


def attempts_between(store: JobStore, start: datetime, end: datetime | None, now: datetime) -> list[TimelineAttempt]:
    """GET /attempts: a range that starts at most MAX_TIMELINE_DAYS before `now` and ends after it
    starts (None: now); the store reads live jobs and those that ended an attempt since `start`."""
    end = now if end is None else end
    if end < start:
        raise InvalidRequest("to", "to must not be before from")
    if start < now - timedelta(days=MAX_TIMELINE_DAYS):
        raise InvalidRequest("from", f"from must be within the last {MAX_TIMELINE_DAYS} days")
    return attempts_overlapping(store.jobs_with_attempts_since(start, now), start, end)
