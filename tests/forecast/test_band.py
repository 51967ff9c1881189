"""Start estimates as a band: three replays with every job's low, likely and high duration."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.forecast.durations import Basis, DurationHistory, DurationSummary, keys_for
from smq_lambda.forecast.estimate import assumes, estimate_starts, kind_of, remaining
from smq_lambda.forecast.start_estimate import EstimateKind
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from tests.scheduling.builders import NOW, P5
from tests.simulate.test_estimate import job, later, running

CONFIG = SchedulerConfig(pools={P5: 1})


def learned(*seconds: float, name: str = "train-1") -> DurationHistory:
    summary = DurationSummary()
    for index, value in enumerate(seconds):
        summary = summary.with_duration(f"done-{index}", value)
    return DurationHistory({keys_for(job(name))[0]: summary})


FAMILY = learned(600, 800, 1000, 1200, 1400)
"""5th, 50th and 95th percentiles 640, 1000, 1360 for the `train` family."""


def offsets(estimate) -> tuple[float | None, float | None, float | None]:  # type: ignore[no-untyped-def]
    return tuple(
        None if at is None else (at - NOW).total_seconds() for at in (estimate.earliest, estimate.at, estimate.latest)
    )  # type: ignore[return-value]


def test_behind_a_running_job_of_a_known_family_the_band_is_its_percentiles_less_what_it_trained() -> None:
    jobs = (running("train-1", started_ago_s=200), job("next", tagged_s=600))

    estimate = estimate_starts(Snapshot(jobs=jobs), NOW, CONFIG, FAMILY)["next"]

    assert offsets(estimate) == (440, 800, 1160)
    assert estimate.kind is EstimateKind.BAND
    assert (
        estimate.assumed
        == "assumes 1 job ahead runs as long as similar jobs that completed; no new higher-priority jobs"
    )


def test_the_bands_of_several_jobs_ahead_add_up() -> None:
    jobs = (
        running("train-1", started_ago_s=0),
        job("train-2", submitted_at=later(0)),
        job("last", tagged_s=60, submitted_at=later(1)),
    )

    estimates = estimate_starts(Snapshot(jobs=jobs), NOW, CONFIG, FAMILY)

    assert offsets(estimates["train-2"]) == (640, 1000, 1360)
    assert offsets(estimates["last"]) == (1280, 2000, 2720)


def test_without_history_a_max_runtime_is_a_ceiling_whose_band_starts_now() -> None:
    """At most 50 min: the job ahead may end at any moment before its MaxRuntimeInSeconds."""
    jobs = (
        running("train-1", max_runtime_s=3600, started_ago_s=600),
        job("train-2", max_runtime_s=3600, submitted_at=later(0)),
        job("next", submitted_at=later(1)),
    )

    estimates = estimate_starts(Snapshot(jobs=jobs), NOW, CONFIG)

    assert offsets(estimates["train-2"]) == (0, 3000, 3000)
    assert offsets(estimates["next"]) == (0, 6600, 6600)
    assert {estimates[name].kind for name in ("train-2", "next")} == {EstimateKind.CEILING}


def test_a_ceiling_behind_a_tagged_job_starts_no_earlier_than_the_tag_allows() -> None:
    jobs = (
        running("r", tagged_s=1200, started_ago_s=0),
        job("m", max_runtime_s=3600, submitted_at=later(0)),
        job("next", submitted_at=later(1)),
    )

    estimate = estimate_starts(Snapshot(jobs=jobs), NOW, CONFIG)["next"]

    assert offsets(estimate) == (1200, 4800, 4800)
    assert estimate.kind is EstimateKind.CEILING


def test_a_family_seen_once_gives_its_likely_duration_within_all_it_can_take() -> None:
    once = learned(1000)
    jobs = (running("train-1", max_runtime_s=3600, started_ago_s=200), job("next", tagged_s=60))

    estimate = estimate_starts(Snapshot(jobs=jobs), NOW, CONFIG, once)["next"]

    assert offsets(estimate) == (0, 800, 3400)
    assert estimate.kind is EstimateKind.BAND


def test_tags_alone_give_a_point() -> None:
    jobs = (running("r", tagged_s=3600, started_ago_s=600), job("next"))

    estimate = estimate_starts(Snapshot(jobs=jobs), NOW, CONFIG)["next"]

    assert offsets(estimate) == (3000, 3000, 3000)
    assert estimate.kind is EstimateKind.POINT


def test_a_job_that_outran_its_family_likely_runs_a_minute_more_and_at_most_to_its_max_runtime() -> None:
    left = remaining(running("train-1", max_runtime_s=9000, started_ago_s=5000), NOW, FAMILY)

    assert (left.low_s, left.likely_s, left.high_s, left.basis) == (60, 60, 4000, Basis.FAMILY)


def test_without_a_max_runtime_a_job_that_outran_its_band_has_no_late_end() -> None:
    left = remaining(running("train-1", started_ago_s=5000), NOW, FAMILY)

    assert (left.low_s, left.likely_s, left.high_s) == (60, 60, math.inf)


def test_a_running_learned_job_is_capped_by_what_its_attempt_has_left() -> None:
    left = remaining(running("train-1", max_runtime_s=1000, started_ago_s=100), NOW, FAMILY)

    assert (left.low_s, left.likely_s, left.high_s) == (540, 900, 900)


@pytest.mark.parametrize(
    ("sources", "kind"),
    [
        ({}, EstimateKind.POINT),
        ({Basis.TAG: 2}, EstimateKind.POINT),
        ({Basis.MAX_RUNTIME: 1, Basis.TAG: 1}, EstimateKind.CEILING),
        ({Basis.POOL: 1, Basis.MAX_RUNTIME: 1}, EstimateKind.BAND),
    ],
)
def test_kind_of(sources: dict[Basis, int], kind: EstimateKind) -> None:
    assert kind_of(sources) is kind


def test_the_sentence_counts_each_source() -> None:
    assert assumes({Basis.TAG: 2, Basis.FAMILY: 1, Basis.POOL: 1, Basis.MAX_RUNTIME: 1}) == (
        "assumes 5 jobs ahead run: 2 as tagged (smq:expected-duration), 2 as long as similar jobs that completed "
        "and 1 for its MaxRuntimeInSeconds (an upper bound); no new higher-priority jobs"
    )


names = st.sampled_from(["train-1", "train-2", "eval-1", "eval-2", "other-3"])


@st.composite
def queues(draw: st.DrawFn) -> tuple[Snapshot, SchedulerConfig, DurationHistory]:
    capacity = draw(st.integers(1, 3))
    jobs = []
    for index in range(draw(st.integers(1, 7))):
        name = f"{draw(names)}-{index}"
        live = draw(st.booleans())
        fields = {
            "priority": draw(st.integers(0, 2)),
            "instances": draw(st.integers(1, capacity)),
            "tagged_s": draw(st.none() | st.integers(60, 5000)),
            "max_runtime_s": draw(st.none() | st.integers(60, 8000)),
            "submitted_at": later(index),
        }
        if live and sum(each.where.instances for each in jobs if each.is_live) + fields["instances"] <= capacity:  # type: ignore[operator]
            jobs.append(job(name, state=JobState.RUNNING, started_ago_s=draw(st.integers(0, 4000)), **fields))  # type: ignore[arg-type]
        else:
            jobs.append(job(name, **fields))  # type: ignore[arg-type]
    history = {}
    for family in ("train", "eval"):
        samples = draw(st.lists(st.integers(60, 6000), max_size=8))
        summary = DurationSummary()
        for index, value in enumerate(samples):
            summary = summary.with_duration(f"{family}-{index}", value)
        history[keys_for(job(f"{family}-1"))[0]] = summary
    backfill = draw(st.booleans())
    return (
        Snapshot(jobs=tuple(jobs)),
        SchedulerConfig(pools={P5: capacity}, backfill=backfill),
        DurationHistory(history),
    )


@settings(max_examples=60, deadline=None)
@given(queues())
def test_bands_are_ordered_never_before_now_and_a_job_with_room_starts_now(
    queue: tuple[Snapshot, SchedulerConfig, DurationHistory],
) -> None:
    snapshot, config, history = queue

    estimates = estimate_starts(snapshot, NOW, config, history)

    for estimate in estimates.values():
        if estimate.at is None:
            assert estimate.earliest is None and estimate.latest is None
            continue
        assert estimate.earliest is not None
        assert NOW <= estimate.earliest <= estimate.at
        assert estimate.latest is None or estimate.at <= estimate.latest
    free = config.pools[P5] - sum(each.where.instances for each in snapshot.jobs if each.is_live)
    head = min(
        (each for each in snapshot.jobs if each.state is JobState.PENDING), key=lambda each: each.order, default=None
    )
    if head is not None and head.where.instances <= free:
        estimate = estimates[head.name]
        assert (estimate.earliest, estimate.at, estimate.latest) == (NOW, NOW, NOW)


def test_the_point_case_replays_once() -> None:
    jobs = [job(f"j-{n}", tagged_s=60, submitted_at=later(n)) for n in range(3)]

    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, CONFIG)

    assert [offsets(estimates[f"j-{n}"]) for n in range(3)] == [(0, 0, 0), (60, 60, 60), (120, 120, 120)]
    assert timedelta(0) == estimates["j-0"].at - NOW


@pytest.mark.parametrize(
    "ahead",
    [
        pytest.param(running("train-1", started_ago_s=200), id="a stop the replay sends"),
        pytest.param(job("train-1", state=JobState.PREEMPTING, started_ago_s=200), id="a stop in flight"),
        pytest.param(running("tagged", tagged_s=3600, started_ago_s=200), id="a stop of a job of known duration"),
    ],
)
def test_a_stop_lands_at_once_early_after_a_minute_likely_and_after_sagemakers_two_late(ahead) -> None:  # type: ignore[no-untyped-def]
    jobs = (ahead, job("urgent", priority=9))

    estimate = estimate_starts(Snapshot(jobs=jobs), NOW, CONFIG, FAMILY)["urgent"]

    assert offsets(estimate) == (0, 60, 120)


def test_a_short_job_that_overran_its_band_is_given_a_tenth_of_it_more() -> None:
    short = learned(10, 10, 10, name="quick-1")
    jobs = (running("quick-1", max_runtime_s=600, started_ago_s=30), job("next", tagged_s=60))

    estimate = estimate_starts(Snapshot(jobs=jobs), NOW, CONFIG, short)["next"]

    assert offsets(estimate) == (1, 1, 570)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 3),
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3), st.integers(60, 8000), st.booleans()), max_size=7),
)
def test_behind_ceilings_alone_the_earliest_start_is_now(
    capacity: int, drafts: list[tuple[int, int, int, bool]]
) -> None:
    """Every job known only by its MaxRuntimeInSeconds may end at once, so "at most" starts now."""
    jobs, used = [], 0
    for index, (priority, instances, max_runtime_s, live) in enumerate(drafts):
        fields = {"priority": priority, "instances": min(instances, capacity), "max_runtime_s": max_runtime_s}
        if live and used + min(instances, capacity) <= capacity:
            used += min(instances, capacity)
            jobs.append(running(f"r-{index}", started_ago_s=30, **fields))  # type: ignore[arg-type]
        else:
            jobs.append(job(f"p-{index}", submitted_at=later(index), **fields))  # type: ignore[arg-type]

    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, SchedulerConfig(pools={P5: capacity}))

    for estimate in estimates.values():
        assert estimate.earliest == NOW
        assert estimate.kind in (EstimateKind.CEILING, EstimateKind.POINT)
