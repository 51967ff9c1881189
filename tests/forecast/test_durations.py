"""Learned durations: families, bounded summaries, and the band a job is expected to train for."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import Purchase, spot_pool
from smq_lambda.forecast.durations import (
    BAND_PERCENTILES,
    MAX_COUNTED_JOBS,
    MAX_SAMPLES,
    NO_HISTORY,
    Basis,
    DurationBand,
    DurationHistory,
    DurationKey,
    DurationSummary,
    Level,
    completed_duration,
    earlier_keys,
    expected_duration,
    family_of,
    family_of_name,
    keys_for,
)

from tests.scheduling.builders import P5, T0

ALICE = "arn:aws:iam::123456789012:user/alice"


def job(
    name: str = "resnet-7", *, family: str | None = None, tagged_s: int | None = None, max_runtime_s: int | None = None
) -> Job:
    return Job(
        name=name,
        job_id=f"id-{name}",
        state=JobState.PENDING,
        priority=0,
        submitted_at=T0,
        demand={P5: 1},
        owner=ALICE,
        family=family,
        expected_duration_s=tagged_s,
        max_runtime_s=max_runtime_s,
    )


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("train-7", "train"),
        ("bert-ft-20261126-101500", "bert-ft"),
        ("vit-2026-11-26-10-15-00-123", "vit"),
        ("pytorch-training-2026-11-26-10-15-00-123", "pytorch-training"),
        ("job3", "job"),
        ("resnet50-3", "resnet50"),
        ("resnet50", "resnet"),
        ("llama-v2-17", "llama-v2"),
        ("nightly", "nightly"),
        ("12345", "12345"),
        ("7-3", "7"),
    ],
)
def test_the_family_of_a_name_drops_its_counter_or_timestamp(name: str, family: str) -> None:
    assert family_of_name(name) == family


def test_the_family_tag_wins_over_the_name() -> None:
    assert family_of(job("resnet-7", family="vision-baseline")) == "vision-baseline"
    assert family_of(job("resnet-7")) == "resnet"


def test_keys_go_from_the_most_specific_to_the_pool() -> None:
    assert keys_for(job("resnet-7")) == (
        DurationKey(Level.FAMILY, f"{ALICE}#resnet"),
        DurationKey(Level.OWNER_POOL, f"{ALICE}#{P5}"),
        DurationKey(Level.POOL, P5),
    )


SPOT_P5 = spot_pool(P5)


def completed_spot(name: str = "resnet-6") -> Job:
    """A spot job that completed in its type's spot pool: the pool it held is `<type>:spot`."""
    on_spot = Placement(P5, 1, pool=SPOT_P5, spot=True)
    ran = Attempt(
        1, f"{name}-x-1", T0, ended_at=T0 + timedelta(hours=1), outcome=AttemptOutcome.COMPLETED, placement=on_spot
    )
    return replace(job(name), state=JobState.COMPLETED, demand={SPOT_P5: 1}, attempts=(ran,), purchase=Purchase.SPOT)


def test_a_spot_job_is_learned_and_looked_up_under_its_instance_type() -> None:
    """What a completed spot job teaches is read for the next one, still waiting (listed under its
    type), and for an on-demand job of the type: the owner's and everyone's level are per type."""
    waiting = replace(job("resnet-7"), purchase=Purchase.SPOT)

    assert keys_for(completed_spot()) == keys_for(waiting) == keys_for(job("resnet-7"))
    assert keys_for(waiting)[1:] == (DurationKey(Level.OWNER_POOL, f"{ALICE}#{P5}"), DurationKey(Level.POOL, P5))


def test_what_an_earlier_release_learned_under_a_spot_pool_still_counts_as_older_durations() -> None:
    """The previous release kept a spot job's durations under its spot pool: they are read with the
    type's, before its own (newest last), so the type's own replace them as it fills."""
    earlier = DurationHistory(
        {
            DurationKey(Level.POOL, SPOT_P5): summary(1000, 2000),
            DurationKey(Level.POOL, P5): summary(3000),
        }
    )
    stranger = replace(job("other-1", max_runtime_s=9000), owner="bob")

    assert expected_duration(stranger, earlier) == DurationBand(1100, 2000, 2900, Basis.POOL, 3)
    assert DurationKey(Level.POOL, SPOT_P5) in earlier_keys(stranger)


def summary(*seconds: float) -> DurationSummary:
    built = DurationSummary()
    for index, value in enumerate(seconds):
        built = built.with_duration(f"job-{index}", value)
    return built


def test_a_job_is_counted_once() -> None:
    once = summary().with_duration("a", 100)

    assert once.with_duration("a", 100) is once
    assert once.with_duration("a", 999).seconds == (100.0,)


@given(st.lists(st.tuples(st.sampled_from([f"job-{n}" for n in range(80)]), st.floats(1, 1e6)), max_size=200))
def test_a_summary_stays_bounded_and_keeps_the_newest(additions: list[tuple[str, float]]) -> None:
    built = DurationSummary()
    counted: list[str] = []
    for job_id, seconds in additions:
        built = built.with_duration(job_id, seconds)
        if job_id not in counted[-MAX_COUNTED_JOBS:]:
            counted.append(job_id)

    assert len(built.seconds) <= MAX_SAMPLES
    assert len(built.counted) <= MAX_COUNTED_JOBS
    assert list(built.counted) == counted[-MAX_COUNTED_JOBS:]


@pytest.mark.parametrize(
    ("seconds", "q", "expected"),
    [
        ((10,), 50, 10),
        ((10, 20, 30, 40, 50), 25, 20),
        ((10, 20, 30, 40, 50), 50, 30),
        ((10, 20), 75, 17.5),
        ((5, 1, 3), 0, 1),
    ],
)
def test_percentiles_interpolate(seconds: tuple[float, ...], q: float, expected: float) -> None:
    assert summary(*seconds).percentile(q) == expected


HISTORY = DurationHistory(
    {
        DurationKey(Level.FAMILY, f"{ALICE}#resnet"): summary(600, 700, 800, 900, 1000),
        DurationKey(Level.FAMILY, f"{ALICE}#sparse"): summary(50, 60),
        DurationKey(Level.OWNER_POOL, f"{ALICE}#{P5}"): summary(100, 200, 300),
        DurationKey(Level.POOL, P5): summary(1000, 2000, 3000, 4000, 5000),
    }
)


COLD = DurationHistory(
    {
        DurationKey(Level.FAMILY, f"{ALICE}#sparse"): summary(50, 60),
        DurationKey(Level.POOL, P5): summary(900),
    }
)
"""No level with MIN_SAMPLES durations: the most specific with any gives the likely duration."""


def test_the_band_is_the_5th_to_95th_percentile_around_the_median() -> None:
    """Wider than the share of starts wanted in the band (0.8), since a start also moves with what
    the replay does not foresee; the quartiles held half of them (docs/benchmarks.md)."""
    assert BAND_PERCENTILES == (5.0, 50.0, 95.0)


@pytest.mark.parametrize(
    ("candidate", "history", "band"),
    [
        (job(tagged_s=1800), HISTORY, DurationBand(1800, 1800, 1800, Basis.TAG)),
        (job("resnet-7"), HISTORY, DurationBand(620, 800, 980, Basis.FAMILY, 5)),
        (job("resnet-7", max_runtime_s=750), HISTORY, DurationBand(620, 750, 750, Basis.FAMILY, 5)),
        (job("sparse-1"), HISTORY, DurationBand(110, 200, 290, Basis.OWNER_POOL, 3)),
        (replace(job("other-1"), owner="bob"), HISTORY, DurationBand(1200, 3000, 4800, Basis.POOL, 5)),
        (job("sparse-1", max_runtime_s=3600), COLD, DurationBand(0, 55, 3600, Basis.FAMILY, 2)),
        (replace(job("other-1", max_runtime_s=3600), owner="bob"), COLD, DurationBand(0, 900, 3600, Basis.POOL, 1)),
        (job("sparse-1"), COLD, DurationBand(0, 55, math.inf, Basis.FAMILY, 2)),
        (job(max_runtime_s=3600), NO_HISTORY, DurationBand(0, 3600, 3600, Basis.MAX_RUNTIME)),
        (job(), NO_HISTORY, DurationBand(math.inf, math.inf, math.inf, Basis.UNKNOWN)),
    ],
    ids=[
        "tag",
        "family",
        "capped",
        "too-few-in-family",
        "pool",
        "few-anywhere-widen-to-max-runtime",
        "one-in-pool",
        "few-and-no-max-runtime",
        "max-runtime-is-a-ceiling-from-zero",
        "unknown",
    ],
)
def test_expected_duration(candidate: Job, history: DurationHistory, band: DurationBand) -> None:
    assert expected_duration(candidate, history) == band


@given(
    st.lists(st.floats(1, 1e6), min_size=1, max_size=60),
    st.none() | st.integers(1, 10**6),
)
def test_a_band_is_ordered_and_capped_by_max_runtime(seconds: list[float], max_runtime_s: int | None) -> None:
    history = DurationHistory({keys_for(job())[0]: summary(*seconds)})

    band = expected_duration(job(max_runtime_s=max_runtime_s), history)

    assert band.low_s <= band.likely_s <= band.high_s
    if max_runtime_s is not None:
        assert band.high_s <= max_runtime_s


def attempt(number: int, start_s: int, end_s: int, outcome: AttemptOutcome) -> Attempt:
    return Attempt(
        number=number,
        training_job_name=f"resnet-7-abc-{number}",
        started_at=T0 + timedelta(seconds=start_s),
        ended_at=T0 + timedelta(seconds=end_s),
        outcome=outcome,
    )


def test_a_completed_duration_counts_the_attempts_it_resumed_from() -> None:
    done = replace(
        job(),
        state=JobState.COMPLETED,
        attempts=(
            attempt(1, 0, 300, AttemptOutcome.PREEMPTED),
            attempt(2, 400, 450, AttemptOutcome.REFUSED),
            attempt(3, 1000, 1500, AttemptOutcome.COMPLETED),
        ),
    )

    assert completed_duration(done) == 800


def test_only_a_completion_has_a_duration() -> None:
    failed = replace(job(), state=JobState.FAILED, attempts=(attempt(1, 0, 300, AttemptOutcome.FAILED),))

    assert completed_duration(failed) is None
    assert completed_duration(job()) is None
