"""Spot and on-demand capacity through the scheduler handler, with fakes: spot pools counted apart,
a spot job going on demand after waiting, and adaptive spot (interruptions counted once from
SageMaker's reports, the rate steering the next spot job on demand, published with the pools)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from smq_lambda.domain.config.spot_document import AdaptiveSpot, SpotSection
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import purchase_of, spot_pool

from tests.service.harness import POOL, World, queued_job
from tests.service.test_governance_lifecycle import report

SPOT_POOL = spot_pool(POOL)


def world(*, after: int | None = None, limit: float | None = None) -> World:
    built = World(capacity={POOL: 1, SPOT_POOL: 1})
    adaptive = None if limit is None else AdaptiveSpot(limit, half_life_s=3600)
    built.config.config = replace(
        built.config.config, spot=SpotSection(pools={POOL: 1}, on_demand_after_s=after, adaptive=adaptive)
    )
    return built


def submit_spot(world: World, name: str) -> Job:
    world.clock.advance(seconds=1)
    job = queued_job(name, priority=0, submitted_at=world.clock())
    spot = {
        **job.request,
        "EnableManagedSpotTraining": True,
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200},
    }
    created = world.store.create(replace(job, request=spot, purchase=purchase_of(spot)))
    world.kick()
    return created


def sent(world: World, name: str) -> dict:
    return world.sagemaker.jobs[world.job(name).attempts[-1].training_job_name].request


def test_a_spot_job_runs_in_the_spot_pool_and_goes_on_demand_only_after_waiting() -> None:
    spot = world(after=1800)
    submit_spot(spot, "a")
    submit_spot(spot, "b")

    assert spot.job("a").where.selected == Placement(POOL, 1, pool=SPOT_POOL, spot=True)
    assert sent(spot, "a")["EnableManagedSpotTraining"] is True
    waiting = spot.job("b")
    assert waiting.state is JobState.PENDING
    assert "may go on demand from" in (waiting.reason or "")

    spot.clock.advance(seconds=1800)
    spot.kick()

    assert spot.job("b").state is JobState.STARTING
    assert spot.job("b").where.selected == Placement(POOL, 1)
    assert sent(spot, "b")["EnableManagedSpotTraining"] is False
    assert "MaxWaitTimeInSeconds" not in sent(spot, "b")["StoppingCondition"]


@pytest.mark.parametrize("deliveries", [1, 3])
def test_interruptions_are_counted_once_and_a_high_rate_starts_spot_jobs_on_demand(deliveries: int) -> None:
    spot = world(limit=0.5)
    submit_spot(spot, "a")
    first = spot.job("a").attempts[0].training_job_name
    report(spot, first, "InProgress", "Training")
    for _ in range(2):
        event = report(spot, first, "InProgress", "Interrupted")
        for _ in range(deliveries - 1):
            spot.deliver(event)
        report(spot, first, "InProgress", "Training")
    report(spot, first, "Completed")

    assert len(spot.spot_interruptions.book.by_type[POOL]) == 2
    submit_spot(spot, "b")

    assert spot.job("b").where.selected == Placement(POOL, 1)  # 2 interruptions in a half-life: 1.39/h > 0.5
    rate = spot.pass_summaries.latest().spot_rates[POOL]
    assert rate == pytest.approx(2 * 0.6931, rel=0.01)

    spot.clock.advance(hours=2)  # 1.39/h → 0.35/h: spot again
    submit_spot(spot, "c")
    assert spot.job("c").where.selected == Placement(POOL, 1, pool=SPOT_POOL, spot=True)


def test_one_pass_reads_as_many_spot_jobs_as_the_spot_pool_can_start() -> None:
    spot = World(capacity={POOL: 0, SPOT_POOL: 30})
    spot.config.config = replace(spot.config.config, spot=SpotSection(pools={POOL: 30}))
    for number in range(30):
        spot.clock.advance(seconds=1)
        job = queued_job(f"j{number}", priority=0, submitted_at=spot.clock())
        request = {**job.request, "EnableManagedSpotTraining": True}
        spot.store.create(replace(job, request=request, purchase=purchase_of(request)))

    spot.kick()

    assert all(spot.job(f"j{number}").state is JobState.STARTING for number in range(30))
