"""Learned durations through the scheduler: completions build the history, passes estimate from it,
and a start is measured against the first estimate its job was given."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from smq_lambda.domain.config.spot_document import SpotSection
from smq_lambda.domain.placements.purchase import purchase_of, spot_pool
from smq_lambda.forecast.durations import DurationKey, Level
from smq_lambda.forecast.start_estimate import EstimateKind

from tests.service.harness import POOL, World, queued_job
from tests.support.fake_durations import InMemoryDurationStore

TRAINED = (500, 600, 700)
ALICE = "arn:aws:iam::000000000000:user/alice"
BOB = "arn:aws:iam::000000000000:user/bob"


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

    report = world.pass_summaries.latest()
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
    first = world.pass_summaries.latest()
    assert first is not None and "train-5" in first.first_estimates
    world.later(300)
    world.kick()
    later = world.pass_summaries.latest()
    assert later is not None
    assert later.first_estimates["train-5"] == first.first_estimates["train-5"], "the first estimate is kept"
    capsys.readouterr()

    world.later(298)
    world.progress("train-4", "Completed")

    assert world.job("train-5").state.value in ("starting", "running")
    last = world.pass_summaries.latest()
    assert last is not None and "train-5" not in last.first_estimates
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "StartWithinBand" in line]
    assert len(records) == 1
    assert records[0]["StartWithinBand"] == [1.0]
    assert records[0]["StartEstimateErrorShare"][0] < 0.05
    assert records[0]["StartWithin1Min"] == records[0]["StartWithin10Min"] == [1.0]


def submit_spot(world: World, name: str, owner: str) -> None:
    world.clock.advance(seconds=1)
    job = queued_job(name, priority=0, submitted_at=world.clock())
    request = {**job.request, "EnableManagedSpotTraining": True}
    world.store.create(replace(job, request=request, purchase=purchase_of(request), owner=owner, max_runtime_s=3600))
    world.kick()


def test_what_spot_jobs_taught_is_read_for_a_new_users_waiting_spot_jobs() -> None:
    """Alice's spot jobs ran in the type's spot pool; Bob has no history. His job behind two of his
    own waits for two durations learned from hers, not for two MaxRuntimeInSeconds."""
    durations = InMemoryDurationStore()
    world = World(capacity={POOL: 0, spot_pool(POOL): 1}, durations=durations)
    world.config.config = replace(world.config.config, spot=SpotSection(pools={POOL: 1}))
    for index, seconds in enumerate(TRAINED, start=1):
        submit_spot(world, f"train-{index}", ALICE)
        world.progress(f"train-{index}", "InProgress")
        world.later(seconds - 2)
        world.progress(f"train-{index}", "Completed")
    assert DurationKey(Level.POOL, POOL) in durations.summaries

    for name in ("bob-a", "bob-b", "bob-c"):
        submit_spot(world, name, BOB)

    report = world.pass_summaries.latest()
    assert report is not None
    started = world.job("bob-a").current_attempt
    assert started is not None
    estimate = report.estimates["bob-c"]
    assert estimate.kind is EstimateKind.BAND
    assert estimate.at is not None and (estimate.at - started.started_at).total_seconds() == 1200
