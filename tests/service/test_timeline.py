"""Which attempts a timeline draws (service/timeline.py): table cases at the range's edges, and a
property: exactly the attempts that overlap, each once, in order of start, whatever extra jobs the
store returned and however often."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.model import Attempt, Job
from smq_lambda.domain.states import JobState
from smq_lambda.errors import InvalidRequest
from smq_lambda.service.timeline import MAX_TIMELINE_DAYS, attempts_between, attempts_overlapping, overlaps

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


spans = st.tuples(st.integers(0, 100), st.one_of(st.none(), st.integers(0, 60))).map(
    lambda span: (span[0], None if span[1] is None else span[0] + span[1])
)


@given(
    jobs=st.lists(st.lists(spans, min_size=0, max_size=3), max_size=6),
    start=st.integers(0, 120),
    length=st.integers(0, 60),
    repeats=st.integers(1, 3),
)
def test_exactly_the_overlapping_attempts_once_each_in_order_of_start(
    jobs: list[list[tuple[int, int | None]]], start: int, length: int, repeats: int
) -> None:
    built = [job(f"j{i}", *(attempt(n + 1, s, e) for n, (s, e) in enumerate(spans))) for i, spans in enumerate(jobs)]
    found = attempts_overlapping(built * repeats, at(start), at(start + length))
    expected = {
        (each.name, a.number)
        for each in built
        for a in each.attempts
        if a.started_at <= at(start + length) and (a.ended_at is None or a.ended_at >= at(start))
    }
    keys = [(item.job.name, item.attempt.number) for item in found]
    assert sorted(keys) == sorted(expected) and len(keys) == len(expected)
    assert [item.attempt.started_at for item in found] == sorted(item.attempt.started_at for item in found)


def test_the_range_must_be_recent_and_in_order() -> None:
    store = InMemoryJobStore()
    now = at(0)
    with pytest.raises(InvalidRequest) as too_old:
        attempts_between(store, now - timedelta(days=MAX_TIMELINE_DAYS, seconds=1), None, now)
    assert too_old.value.field == "from"
    with pytest.raises(InvalidRequest) as backwards:
        attempts_between(store, at(-1), at(-2), now)
    assert backwards.value.field == "to"
    assert attempts_between(store, now - timedelta(days=MAX_TIMELINE_DAYS), None, now) == []
