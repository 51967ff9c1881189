"""Learned durations through the scheduler: completions build the history, passes estimate from it,
and a start is measured against the first estimate its job was given."""

from __future__ import annotations

import json

import pytest
from smq_lambda.forecast.durations import Level
from smq_lambda.forecast.start_estimate import EstimateKind

from tests.service.harness import POOL, World
from tests.support.fake_durations import InMemoryDurationStore

TRAINED = (500, 600, 700)


def run_to_completion(world: World, name: str, seconds: float) -> None:
    world.submit(name, 0)
    world.progress(name, "InProgress")
    world.later(seconds - 2)  # each report comes a second after the last
    world.progress(name, "Completed")


def learned_world() -> tuple[World, InMemoryDurationStore]:
    durations = InMemoryDurationStore()
    world = World(capacity={POOL: 1}, durations=durations)
    for index, seconds in enumerate(TRAINED, start=1):
        run_to_completion(world, f"train-{index}", seconds)
    return world, durations


def test_each_completion_is_added_to_its_family_its_owners_pool_and_its_pool_once() -> None:
    world, durations = learned_world()
    done = world.job("train-3")
    attempt = done.current_attempt
    assert attempt is not None

    world.deliver(world.event(attempt.training_job_name))  # a duplicate completion report

    by_level = {key.level: summary.seconds for key, summary in durations.summaries.items()}
    assert by_level == dict.fromkeys(Level, (500.0, 600.0, 700.0))


def test_a_failed_job_teaches_nothing() -> None:
    durations = InMemoryDurationStore()
    world = World(capacity={POOL: 1}, durations=durations)
    world.submit("broken-1", 0)
    world.progress("broken-1", "InProgress")
    world.progress("broken-1", "Failed", failure_reason="AlgorithmError: boom")

    assert durations.summaries == {}


def test_a_job_behind_one_of_a_known_family_is_given_a_band() -> None:
    world, durations = learned_world()
    world.submit("train-4", 0)
    world.progress("train-4", "InProgress")
    world.submit("train-5", 0)

    report = world.usage.latest()
    assert report is not None
    estimate = report.estimates["train-5"]
    assert estimate.kind is EstimateKind.BAND
    assert estimate.earliest is not None and estimate.latest is not None and estimate.at is not None
    started = world.job("train-4").current_attempt
    assert started is not None
    assert [
        (moment - started.started_at).total_seconds() for moment in (estimate.earliest, estimate.at, estimate.latest)
    ] == [510, 600, 690]
    assert {key.level for key in durations.loads[-1]} == set(Level), "the pass loads the keys of the jobs it estimates"


def test_a_start_is_measured_against_the_first_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    world, _ = learned_world()
    world.submit("train-4", 0)
    world.progress("train-4", "InProgress")
    world.submit("train-5", 0)
    first = world.usage.latest()
    assert first is not None and "train-5" in first.first_estimates
    world.later(300)
    world.kick()
    later = world.usage.latest()
    assert later is not None
    assert later.first_estimates["train-5"] == first.first_estimates["train-5"], "the first estimate is kept"
    capsys.readouterr()

    world.later(298)
    world.progress("train-4", "Completed")

    assert world.job("train-5").state.value in ("starting", "running")
    last = world.usage.latest()
    assert last is not None and "train-5" not in last.first_estimates
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "StartWithinBand" in line]
    assert len(records) == 1
    assert records[0]["StartWithinBand"] == [1.0]
    assert records[0]["StartEstimateErrorShare"][0] < 0.05
