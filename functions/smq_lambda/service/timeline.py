"""Which attempts a timeline of [start, end] draws, one page at a time: pure, over the jobs the
store reads for it, in the store's order (ports.HistoryPosition)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.errors import InvalidRequest
from smq_lambda.ports import HistoryEntry, HistoryPosition, JobStore

MAX_TIMELINE_DAYS = 7
"""How far back GET /attempts reaches: every day since `from` is one index Query."""


@dataclass(frozen=True)
class TimelineAttempt:
    job: Job
    attempt: Attempt


@dataclass(frozen=True)
class PartlyListed:
    """A job a page had no room for all the overlapping attempts of: those numbered up to
    `last_number` were listed."""

    job_id: str
    last_number: int


@dataclass(frozen=True)
class TimelineCursor:
    """Where a page starts: after `after` in the store's order (None: at its start), less what
    `partly` says was listed already."""

    after: HistoryPosition | None
    partly: PartlyListed | None = None


@dataclass(frozen=True)
class TimelinePage:
    attempts: list[TimelineAttempt]
    """In order of start (then job name, attempt number); the pages together are not."""
    next: TimelineCursor | None
    """Where the next page starts; None on the last page."""


def overlaps(attempt: Attempt, start: datetime, end: datetime) -> bool:
    """Began by `end`, and still live or ended at or after `start`."""
    return attempt.started_at <= end and (attempt.ended_at is None or attempt.ended_at >= start)


def timeline_page(
    entries: Iterable[HistoryEntry], start: datetime, end: datetime, *, limit: int, resume: TimelineCursor | None
) -> TimelinePage:
    """At most `limit` of the attempts overlapping [start, end] of `entries` (the store's read from
    `resume`), and where the next page starts. A page ends between two jobs, or inside a job whose
    attempts do not all fit; it has a next page only once an attempt is known to follow, so the
    entries are consumed only up to the first job that does not fit."""
    listed: list[TimelineAttempt] = []
    after = None if resume is None else resume.after
    partly = None if resume is None else resume.partly
    for entry in entries:
        due = [
            TimelineAttempt(entry.job, attempt)
            for attempt in entry.job.attempts
            if overlaps(attempt, start, end) and not _listed_before(entry.job, attempt, partly)
        ]
        room = limit - len(listed)
        if len(due) > room:
            if room:
                partly = PartlyListed(entry.job.job_id, due[room - 1].attempt.number)
            listed.extend(due[:room])
            return TimelinePage(_in_order_of_start(listed), TimelineCursor(after, partly))
        listed.extend(due)
        after = entry.position
        if partly is not None and partly.job_id == entry.job.job_id:
            partly = None
    return TimelinePage(_in_order_of_start(listed), None)


def attempts_between(
    store: JobStore, start: datetime, end: datetime | None, now: datetime, *, limit: int, resume: TimelineCursor | None
) -> TimelinePage:
    """GET /attempts: a range that starts at most MAX_TIMELINE_DAYS before `now` and ends after it
    starts (None: now); the store reads live jobs and those that ended an attempt since `start`,
    `limit + 1` jobs per index read (a job usually brings one attempt), and only as far as the page needs."""
    end = now if end is None else end
    if end < start:
        raise InvalidRequest("to", "to must not be before from")
    if start < now - timedelta(days=MAX_TIMELINE_DAYS):
        raise InvalidRequest("from", f"from must be within the last {MAX_TIMELINE_DAYS} days")
    after = None if resume is None else resume.after
    entries = store.jobs_with_attempts_since(start, now, after=after, page_size=limit + 1)
    return timeline_page(entries, start, end, limit=limit, resume=resume)


def _listed_before(job: Job, attempt: Attempt, partly: PartlyListed | None) -> bool:
    return partly is not None and partly.job_id == job.job_id and attempt.number <= partly.last_number


def _in_order_of_start(attempts: list[TimelineAttempt]) -> list[TimelineAttempt]:
    return sorted(attempts, key=lambda item: (item.attempt.started_at, item.job.name, item.attempt.number))
