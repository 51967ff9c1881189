"""The spot interruption book: each interruption counted once per attempt, whatever reports repeat,
and the decayed rate per instance type."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.placements.spot_rates import (
    KEEP_FOR,
    MAX_ATTEMPTS,
    MAX_PER_TYPE,
    SpotInterruptions,
    rate_per_hour,
    rates,
    with_interruptions,
)

G5 = "ml.g5.xlarge"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = 3600


def test_a_report_adds_only_the_interruptions_not_counted_yet() -> None:
    book = with_interruptions(SpotInterruptions(), "a-1", G5, 2, NOW)
    assert book is not None and book.by_type == {G5: (NOW, NOW)} and book.version == 1
    later = NOW + timedelta(minutes=5)
    assert with_interruptions(book, "a-1", G5, 2, later) is None  # a duplicate
    assert with_interruptions(book, "a-1", G5, 1, later) is None  # a late report
    third = with_interruptions(book, "a-1", G5, 3, later)
    assert third is not None and third.by_type == {G5: (NOW, NOW, later)}
    assert with_interruptions(SpotInterruptions(), "a-1", G5, 0, NOW) is None


@given(reports=st.lists(st.tuples(st.sampled_from(["a-1", "b-1"]), st.integers(0, 6)), max_size=30))
def test_however_reports_repeat_each_attempt_counts_its_highest_report(reports: list[tuple[str, int]]) -> None:
    book = SpotInterruptions()
    for name, seen in reports:
        book = with_interruptions(book, name, G5, seen, NOW) or book
    highest = {name: max(seen for other, seen in reports if other == name) for name, _ in reports}
    assert len(book.by_type.get(G5, ())) == sum(highest.values())


def test_the_book_stays_bounded() -> None:
    book = SpotInterruptions()
    for number in range(MAX_ATTEMPTS + 5):
        book = with_interruptions(book, f"a-{number}", G5, 1, NOW + timedelta(seconds=number)) or book
    assert len(book.counted) == MAX_ATTEMPTS and len(book.by_type[G5]) == MAX_PER_TYPE
    old = with_interruptions(SpotInterruptions(), "old-1", G5, 1, NOW - KEEP_FOR)
    assert old is not None
    fresh = with_interruptions(old, "new-1", "ml.p5.48xlarge", 1, NOW)
    assert fresh is not None and G5 not in fresh.by_type and set(fresh.counted) == {"new-1"}


@pytest.mark.parametrize("half_life_s", [HOUR, 6 * HOUR])
def test_a_steady_stream_reads_as_its_rate_and_halves_each_half_life(half_life_s: int) -> None:
    every = timedelta(minutes=6)  # 10 an hour
    times = tuple(NOW - every * n for n in range(20_000))
    assert rate_per_hour(times, NOW, half_life_s) == pytest.approx(10, rel=0.05)
    later = NOW + timedelta(seconds=half_life_s)
    assert rate_per_hour(times, later, half_life_s) == pytest.approx(rate_per_hour(times, NOW, half_life_s) / 2)


def test_one_interruption_now_reads_as_ln2_per_half_life() -> None:
    book = with_interruptions(SpotInterruptions(), "a-1", G5, 1, NOW)
    assert book is not None
    assert rates(book, NOW, HOUR) == {G5: pytest.approx(math.log(2))}
