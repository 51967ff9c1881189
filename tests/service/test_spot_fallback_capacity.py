"""Spot fallback wired to the queue's configuration, through the scheduler handler with fakes: a
spot job whose type has no on-demand capacity (`"pools": {T: 0}` beside `spot.pools {T: 8}`) is
never moved on demand, where it would wait for good beside free spot instances."""

from __future__ import annotations

from dataclasses import replace

from smq_lambda.domain.config.spot_document import SpotSection
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.purchase import spot_pool

from tests.service.harness import POOL, World
from tests.service.test_governance_lifecycle import interrupt, report, running_spot_job

STAYS = (
    "stays on spot: interrupted more than 3 times (spot_interruption_limit 3), but ml.p5.48xlarge has no "
    "on-demand capacity here (pool of 0 instances, it needs 1); SageMaker goes on restarting it on spot"
)


def spot_only_capacity() -> World:
    world = World(capacity={POOL: 0, spot_pool(POOL): 8})
    world.config.config = replace(world.config.config, spot=SpotSection(pools={POOL: 8}))
    return world


def test_an_interrupted_spot_job_without_on_demand_capacity_stays_on_spot_and_says_why() -> None:
    world = spot_only_capacity()
    first = running_spot_job(world)

    for _ in range(4):
        interrupt(world, first)

    job = world.job("a")
    assert (job.state, len(job.attempts), job.reason) == (JobState.RUNNING, 1, STAYS)
    assert job.history[-1].by == "governance" and job.history[-1].what == STAYS
    assert world.sagemaker.stop_calls == []
    report(world, first, "Completed")
    assert world.job("a").state is JobState.COMPLETED


def test_a_spot_job_stopped_at_its_max_wait_without_on_demand_capacity_fails_saying_why() -> None:
    world = spot_only_capacity()
    first = running_spot_job(world)

    report(world, first, "Stopped", "MaxWaitTimeExceeded")
    world.kick()

    job = world.job("a")
    assert job.state is JobState.FAILED and job.attempts[-1].outcome == AttemptOutcome.MAX_WAIT_TIME_EXCEEDED
    assert job.reason is not None and "ml.p5.48xlarge has no on-demand capacity here" in job.reason
