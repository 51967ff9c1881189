"""Which attempts a timeline draws (service/timeline.py): table cases at the range's edges, and a
property: page after page, exactly the attempts that overlap, each once, no page over its limit and
each in order of start, whatever extra jobs the store returned; and a page reads only what it needs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import InvalidRequest
from smq_lambda.ports import HistoryEntry, HistoryPosition
from smq_lambda.service.timeline import (
    MAX_TIMELINE_DAYS,
    TimelineCursor,
    TimelinePage,
    attempts_between,
    overlaps,
    timeline_page,
)

from tests.support.fakes import InMemoryJobStore

T0 = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def attempt(number: int, start: float, end: float | None) -> Attempt:
    return Attempt(number, f"job-abc-{number}", at(start), None if end is None else at(end))


def job(name: str, *attempts: Attempt) -> Job:
    return Job(
        name=name,
        job_id=f"id-{name}",
        state=JobState.RUNNING if attempts and attempts[-1].is_open else JobState.COMPLETED,
        priority=0,
        submitted_at=at(-100),
        demand={"ml.g5.xlarge": 1},
        owner="arn:aws:iam::123456789012:user/alice",
        attempts=attempts,
    )


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (10, 20, True),  # inside
        (0, 10, True),  # ends as the range starts
        (20, 30, True),  # starts as the range ends
        (-10, -1, False),  # before
        (21, 30, False),  # after
        (0, None, True),  # live
        (21, None, False),  # live, began after the range
    ],
)
def test_an_attempt_overlaps_when_it_began_by_the_end_and_ended_at_or_after_the_start(
    start: float, end: float | None, expected: bool
) -> None:
    assert overlaps(attempt(1, start, end), at(10), at(20)) is expected


def read_order(jobs: list[Job]) -> list[HistoryEntry]:
    """The jobs as a store reads them: live ones first, then ended ones, in list order within each."""
    return [
        HistoryEntry(each, HistoryPosition(not each.is_live, str(each.state), f"{index:04d}", each.name))
        for index, each in enumerate(sorted(jobs, key=lambda each: not each.is_live))
    ]


def every_page(entries: list[HistoryEntry], start: datetime, end: datetime, limit: int) -> list[TimelinePage]:
    """Page after page, each read from where the last stopped, as GET /attempts with its tokens."""
    pages = [timeline_page(entries, start, end, limit=limit, resume=None)]
    while (cursor := pages[-1].next) is not None and len(pages) <= len(entries) * 4 + 1:
        after = cursor.after
        rest = [entry for entry in entries if after is None or entry.position > after]
        pages.append(timeline_page(rest, start, end, limit=limit, resume=cursor))
    return pages


spans = st.tuples(st.integers(0, 100), st.one_of(st.none(), st.integers(0, 60))).map(
    lambda span: (span[0], None if span[1] is None else span[0] + span[1])
)


@given(
    jobs=st.lists(st.lists(spans, min_size=0, max_size=4), max_size=8),
    start=st.integers(0, 120),
    length=st.integers(0, 60),
    limit=st.integers(1, 5),
)
def test_pages_hold_exactly_the_overlapping_attempts_once_each(
    jobs: list[list[tuple[int, int | None]]], start: int, length: int, limit: int
) -> None:
    built = [job(f"j{i}", *(attempt(n + 1, s, e) for n, (s, e) in enumerate(spans))) for i, spans in enumerate(jobs)]
    pages = every_page(read_order(built), at(start), at(start + length), limit)
    expected = {
        (each.name, a.number)
        for each in built
        for a in each.attempts
        if a.started_at <= at(start + length) and (a.ended_at is None or a.ended_at >= at(start))
    }
    keys = [(item.job.name, item.attempt.number) for page in pages for item in page.attempts]
    assert sorted(keys) == sorted(expected) and len(keys) == len(expected)
    assert pages[-1].next is None
    assert all(len(page.attempts) == limit for page in pages[:-1]) and len(pages[-1].attempts) <= limit
    for page in pages:
        assert [item.attempt.started_at for item in page.attempts] == sorted(
            item.attempt.started_at for item in page.attempts
        )


def test_a_job_that_does_not_fit_continues_on_the_next_page() -> None:
    long = job("long", attempt(1, 0, 5), attempt(2, 6, 10), attempt(3, 11, None))
    entries = read_order([long, job("short", attempt(1, 1, 2))])

    first = timeline_page(entries, at(0), at(20), limit=2, resume=None)

    assert [(item.job.name, item.attempt.number) for item in first.attempts] == [("long", 1), ("long", 2)]
    assert first.next is not None and first.next.after is None and first.next.partly is not None
    second = timeline_page(entries, at(0), at(20), limit=2, resume=first.next)
    assert [(item.job.name, item.attempt.number) for item in second.attempts] == [("short", 1), ("long", 3)]
    assert second.next is None


def test_a_page_reads_the_store_only_up_to_the_first_job_that_does_not_fit() -> None:
    entries = read_order([job(f"j{i:03d}", attempt(1, i % 50, None)) for i in range(300)])
    read: list[HistoryEntry] = []

    def counted() -> Iterator[HistoryEntry]:
        for entry in entries:
            read.append(entry)
            yield entry

    page = timeline_page(counted(), at(0), at(60), limit=100, resume=None)

    assert len(page.attempts) == 100 and len(read) == 101
    assert page.next == TimelineCursor(entries[99].position)


def test_the_range_must_be_recent_and_in_order() -> None:
    store = InMemoryJobStore()
    now = at(0)
    with pytest.raises(InvalidRequest) as too_old:
        attempts_between(store, now - timedelta(days=MAX_TIMELINE_DAYS, seconds=1), None, now, limit=10, resume=None)
    assert too_old.value.field == "from"
    with pytest.raises(InvalidRequest) as backwards:
        attempts_between(store, at(-1), at(-2), now, limit=10, resume=None)
    assert backwards.value.field == "to"
    empty = attempts_between(store, now - timedelta(days=MAX_TIMELINE_DAYS), None, now, limit=10, resume=None)
    assert empty == TimelinePage([], None)
