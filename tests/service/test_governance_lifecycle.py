"""Spot fallback, MaxWaitTimeExceeded and failure retry through the scheduler handler, with fakes:
SageMaker's events (delivered once, twice or late) and reconciliation drive them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from smq_lambda.domain.config.spot_document import SpotSection
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import purchase_of, spot_pool
from smq_lambda.governance.policy import Policy, RetryPolicy

from tests.service.harness import POOL, World, queued_job

INFRASTRUCTURE = "InternalServerError: We encountered an internal error. Please try again."
USER_CODE = "AlgorithmError: ExecuteUserScriptError: ExitCode 1"


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


def report(
    world: World, training_job: str, status: str, secondary: str | None = None, **details: Any
) -> dict[str, Any]:
    """SageMaker moves `training_job` on and its event is delivered; returns the event."""
    world.clock.advance(seconds=1)
    world.sagemaker.set_status(training_job, status, secondary_status=secondary, **details)
    event = world.event(training_job)
    world.deliver(event)
    return event


def interrupt(world: World, training_job: str, *, restart: bool = True) -> dict[str, Any]:
    """One spot interruption (its event is returned), then SageMaker's restart into Training."""
    event = report(world, training_job, "InProgress", "Interrupted")
    if restart:
        report(world, training_job, "InProgress", "Training")
    return event


def running_spot_job(world: World, name: str = "a") -> str:
    submit_spot(world, name)
    first = world.job(name).attempts[0].training_job_name
    report(world, first, "InProgress", "Training")
    assert world.job(name).state is JobState.RUNNING
    return first


@pytest.mark.parametrize(
    ("limit", "interruptions", "falls_back"),
    [(3, 1, False), (3, 3, False), (3, 4, True), (0, 1, True), (1, 1, False), (1, 2, True)],
)
def test_a_spot_attempt_falls_back_only_once_interrupted_more_than_the_limit(
    limit: int, interruptions: int, falls_back: bool
) -> None:
    world = World(capacity={POOL: 1})
    world.policy.policy = Policy(spot_interruption_limit=limit)
    first = running_spot_job(world)

    for number in range(1, interruptions + 1):
        interrupt(world, first, restart=number < interruptions)

    job = world.job("a")
    if not falls_back:
        assert job.state is JobState.RUNNING and len(job.attempts) == 1
        assert world.sagemaker.stop_calls == []
        return
    assert job.attempts[0].outcome == AttemptOutcome.SPOT_FALLBACK
    assert f"interrupted {interruptions} times (limit {limit})" in (job.attempts[0].reason or "")
    assert world.sagemaker.stop_calls == [first]


def test_the_fallback_stops_the_spot_attempt_and_queues_the_job_on_demand_behind_capacity() -> None:
    world = World(capacity={POOL: 1})
    first = running_spot_job(world)
    submitted_at = world.job("a").submitted_at
    for _ in range(3):
        interrupt(world, first)

    interrupt(world, first, restart=False)  # the stopping spot attempt still holds its instance

    job = world.job("a")
    assert job.state is JobState.PENDING, "it waits for capacity like any other job"
    fallback = job.attempts[0].reason
    assert fallback is not None and fallback.startswith("spot fallback")
    assert job.history[-1].by == "governance" and job.history[-1].what == fallback, "kept past wait reasons"
    assert world.sagemaker.jobs[first].status == "Stopping"
    assert world.sagemaker.start_calls == [first]

    report(world, first, "Stopped")
    world.sagemaker.external = {}
    world.kick()

    job = world.job("a")
    assert job.state is JobState.STARTING and job.submitted_at == submitted_at
    second = job.attempts[-1].training_job_name
    request = world.sagemaker.jobs[second].request
    assert request["EnableManagedSpotTraining"] is False
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600}
    assert request["CheckpointConfig"] == world.sagemaker.jobs[first].request["CheckpointConfig"]
    assert [attempt.outcome for attempt in job.attempts] == [AttemptOutcome.SPOT_FALLBACK, None]


def test_duplicate_and_late_interruption_events_fall_back_once() -> None:
    world = World(capacity={POOL: 1})
    first = running_spot_job(world)
    early = interrupt(world, first)
    for _ in range(2):
        interrupt(world, first)
    decisive = interrupt(world, first, restart=False)

    for event in (decisive, decisive, early, decisive):
        world.deliver(event)
    report(world, first, "Stopped")
    world.deliver(decisive)

    job = world.job("a")
    assert [attempt.outcome for attempt in job.attempts] == [AttemptOutcome.SPOT_FALLBACK, None]
    assert job.state is JobState.STARTING
    assert world.sagemaker.start_calls == [first, job.attempts[-1].training_job_name]


def test_an_on_demand_fallback_never_goes_back_to_spot() -> None:
    world = World(capacity={POOL: 1})
    world.policy.policy = Policy(spot_interruption_limit=0)
    first = running_spot_job(world)
    interrupt(world, first, restart=False)
    report(world, first, "Stopped")
    second = world.job("a").attempts[-1].training_job_name
    report(world, second, "InProgress", "Training")

    interrupt(world, second)  # not a spot job: SageMaker never reports this, and it changes nothing
    report(world, second, "Completed")

    job = world.job("a")
    assert job.state is JobState.COMPLETED and len(job.attempts) == 2
    assert job.request["EnableManagedSpotTraining"] is False


def test_interruptions_lost_in_transit_are_counted_by_reconciliation() -> None:
    world = World(capacity={POOL: 1})
    first = running_spot_job(world)
    for _ in range(4):
        world.sagemaker.set_status(first, "InProgress", secondary_status="Interrupted")
        world.sagemaker.set_status(first, "InProgress", secondary_status="Training")

    world.reconcile()

    job = world.job("a")
    assert job.attempts[0].outcome == AttemptOutcome.SPOT_FALLBACK
    assert world.sagemaker.stop_calls == [first]


def test_a_spot_job_stopped_at_its_max_wait_starts_again_on_demand_once() -> None:
    world = World(capacity={POOL: 1})
    first = running_spot_job(world)

    for _ in range(3):  # the event, its duplicate and reconciliation's late describe
        report(world, first, "Stopped", "MaxWaitTimeExceeded")
        world.kick()

    job = world.job("a")
    assert [attempt.outcome for attempt in job.attempts] == [AttemptOutcome.SPOT_FALLBACK, None]
    assert job.state is JobState.STARTING
    second = job.attempts[-1].training_job_name
    assert world.sagemaker.start_calls == [first, second]
    assert world.sagemaker.stop_calls == []
    assert world.sagemaker.jobs[second].request["EnableManagedSpotTraining"] is False


@pytest.mark.parametrize(
    ("reason", "trained_seconds", "retried"),
    [
        (INFRASTRUCTURE, 300, True),
        ("CapacityError: Unable to provision requested ML compute capacity.", 300, True),
        (INFRASTRUCTURE, 60, True),
        (INFRASTRUCTURE, 59, False),
        (USER_CODE, 300, False),
        ("ClientError: Data download failed", 300, False),
    ],
)
def test_a_failed_attempt_is_retried_only_for_the_infrastructures_reason_after_enough_training(
    reason: str, trained_seconds: int, retried: bool
) -> None:
    world = World(capacity={POOL: 1})
    world.policy.policy = Policy(retry=RetryPolicy(max_retries=2, min_training_seconds=60))
    world.submit("a", 0)
    first = world.job("a").attempts[0].training_job_name
    report(world, first, "InProgress", "Training")
    world.later(trained_seconds - 1)  # the Failed report comes one second later

    report(world, first, "Failed", failure_reason=reason)

    job = world.job("a")
    if retried:
        assert job.attempts[0].outcome == AttemptOutcome.INFRASTRUCTURE_FAILURE
        assert job.state is JobState.STARTING and len(job.attempts) == 2, "back through the queue at once"
        assert "retrying as attempt 2 (retry 1 of 2)" in (job.attempts[0].reason or "")
    else:
        assert job.state is JobState.FAILED and len(job.attempts) == 1
        assert (job.reason or "").startswith(f"{reason}; not retried") and job.attempts[0].reason == job.reason


def test_duplicate_failure_events_retry_once_and_retries_stop_at_the_limit() -> None:
    world = World(capacity={POOL: 1})
    world.policy.policy = Policy(retry=RetryPolicy(max_retries=1))
    world.submit("a", 0)
    first = world.job("a").attempts[0].training_job_name
    failure = report(world, first, "Failed", failure_reason=INFRASTRUCTURE)
    world.deliver(failure)
    world.deliver(failure)
    second = world.job("a").attempts[-1].training_job_name

    report(world, second, "Failed", failure_reason=INFRASTRUCTURE)
    world.deliver(failure)

    job = world.job("a")
    assert job.state is JobState.FAILED
    assert [attempt.outcome for attempt in job.attempts] == [AttemptOutcome.INFRASTRUCTURE_FAILURE, "failed"]
    assert "the job has had its 1 retries (retry.max_retries)" in (job.reason or "")


def test_a_failure_lost_in_transit_is_retried_by_reconciliation() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    first = world.job("a").attempts[0].training_job_name
    report(world, first, "InProgress", "Training")
    world.sagemaker.set_status(first, "Failed", failure_reason=INFRASTRUCTURE)

    world.reconcile()

    job = world.job("a")
    assert job.attempts[0].outcome == AttemptOutcome.INFRASTRUCTURE_FAILURE
    assert job.state is JobState.STARTING and len(job.attempts) == 2


def test_a_spot_attempt_still_stopping_after_its_fallback_holds_its_spot_pool_not_the_jobs_next_one() -> None:
    world = World(capacity={POOL: 1, spot_pool(POOL): 1})
    world.config.config = replace(world.config.config, spot=SpotSection(pools={POOL: 1}))
    world.policy.policy = Policy(spot_interruption_limit=0)
    first = running_spot_job(world)
    assert world.job("a").attempts[0].placement == Placement(POOL, 1, pool=spot_pool(POOL), spot=True)

    interrupt(world, first, restart=False)  # falls back; SageMaker still stops the spot attempt

    assert world.store.in_use().outside == {spot_pool(POOL): 1}
    job = world.job("a")
    assert job.state is JobState.STARTING, "on demand, where nothing holds the pool"
    assert job.attempts[-1].placement == Placement(POOL, 1)


def test_a_late_in_progress_report_of_a_completed_attempt_stops_nothing() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    training_job = world.job("a").attempts[0].training_job_name
    in_progress = report(world, training_job, "InProgress", "Training")
    report(world, training_job, "Completed", "Completed")
    assert world.job("a").state is JobState.COMPLETED

    world.deliver(in_progress)

    assert world.sagemaker.stop_calls == []
