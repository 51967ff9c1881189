"""The scheduler cannot be fooled by forged events, one job's failure never stops the others, an
ambiguous create is not a refusal, and every invocation measures stuck jobs and pool usage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from smq_lambda.domain.jobs.lifecycle import BACKOFF_MAX, StartRetryLimits
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.pass_summary import PoolMeasure
from smq_lambda.scheduling.snapshot import UnpooledPolicy

from tests.service.harness import POOL, World, queued_job, started_outside_the_queue

OTHER_POOL = "ml.g5.xlarge"


def own_name(world: World, job_name: str) -> str:
    attempt = world.job(job_name).current_attempt
    assert attempt is not None
    return attempt.training_job_name


def failing_for(job_name: str, real: Callable[..., Any], *, times: int | None = None) -> Callable[..., Any]:
    """`real`, except that it raises an unexpected error for `job_name` (`times` times, or always)."""
    left = [times]

    def call(subject: Any, *args: Any, **kwargs: Any) -> Any:
        name = subject if isinstance(subject, str) else subject.name
        concerned = name == job_name or name.startswith(f"{job_name}-")  # the job, or one of its attempts
        if concerned and (left[0] is None or left[0] > 0):
            if left[0] is not None:
                left[0] -= 1
            raise RuntimeError(f"unexpected failure for {job_name}")
        return real(subject, *args, **kwargs)

    return call


# ---------------------------------------------------------------- events prove their attempt


@pytest.mark.parametrize("status", ["Completed", "Failed", "Stopped", "InProgress"])
def test_a_training_job_started_outside_the_queue_with_a_victims_tags_changes_nothing(status: str) -> None:
    world = World(capacity={POOL: 2})
    world.submit("victim", 0)
    world.progress("victim", "InProgress")
    before = world.job("victim")

    summary = world.deliver(started_outside_the_queue(world, "forged", status, tagged_job="victim", tagged_attempt=1))

    assert world.job("victim") == before
    assert world.job("victim").current_attempt.is_open  # type: ignore[union-attr]
    assert world.sagemaker.stop_calls == []
    assert summary["job_errors"] == []


@pytest.mark.parametrize("tagged_attempt", [1, 2, 3])
def test_a_forged_report_of_a_running_training_job_never_makes_the_queue_stop_it(tagged_attempt: int) -> None:
    world = World(capacity={POOL: 1})
    world.submit("victim", 0)
    world.progress("victim", "InProgress")
    world.submit("urgent", 5)
    world.finish_stops()
    assert world.job("victim").state is JobState.PENDING, "attempt 1 is closed: reports of it are orphans"

    world.deliver(
        started_outside_the_queue(world, "forged", "InProgress", tagged_job="victim", tagged_attempt=tagged_attempt)
    )

    assert "forged" not in world.sagemaker.stop_calls
    assert world.job("victim").state is JobState.PENDING


def test_the_queues_own_orphan_attempt_is_still_stopped() -> None:
    world = World(capacity={POOL: 1})
    world.submit("low", 0)
    world.progress("low", "InProgress")
    first = own_name(world, "low")
    world.submit("high", 5)
    world.finish_stops()
    world.sagemaker.jobs[first].status = "InProgress"  # SageMaker says the stopped attempt still runs

    world.deliver(world.event(first))

    assert world.sagemaker.stop_calls.count(first) == 2


def test_a_late_report_of_a_finished_job_does_not_land_on_a_new_job_of_that_name() -> None:
    world = World(capacity={POOL: 1})
    world.submit("name", 0)
    world.progress("name", "InProgress")
    old_attempt = own_name(world, "name")
    old_in_progress = world.event(old_attempt)
    world.progress("name", "Completed")
    old_completed = world.event(old_attempt)
    world.submit("name", 0)
    world.progress("name", "InProgress")
    resubmitted = world.job("name")
    assert own_name(world, "name") != old_attempt

    world.deliver(old_completed)
    world.deliver(old_in_progress)

    assert world.job("name") == resubmitted
    assert world.job("name").state is JobState.RUNNING
    assert world.sagemaker.stop_calls == [], "the old job's training job is not the new job's to stop"


# ---------------------------------------------------------------- one job's errors stay its own


def test_an_unexpected_error_in_one_start_is_isolated_and_reconciliation_creates_the_attempt() -> None:
    world = World(capacity={POOL: 2})
    world.sagemaker.start_attempt = failing_for("bad", world.sagemaker.start_attempt, times=1)  # type: ignore[method-assign]
    world.store.create(queued_job("bad", priority=9, submitted_at=world.clock()))
    world.store.create(queued_job("good", priority=0, submitted_at=world.clock()))

    summary = world.kick()

    assert summary["job_errors"] == ["bad"]
    assert summary["started"] == ["good"]
    bad = world.job("bad")
    assert bad.state is JobState.STARTING and bad.current_attempt is not None and bad.current_attempt.is_open
    assert bad.current_attempt.training_job_name not in world.sagemaker.jobs

    repaired = world.reconcile()

    assert repaired["job_errors"] == []
    assert bad.current_attempt.training_job_name in world.sagemaker.jobs
    world.progress("bad", "InProgress")
    assert world.job("bad").state is JobState.RUNNING
    assert world.job("bad").current_attempt.number == 1  # type: ignore[union-attr]


def test_a_start_that_keeps_failing_unexpectedly_gives_its_instances_back_at_the_next_reconciliation() -> None:
    world = World(capacity={POOL: 1})
    world.sagemaker.start_attempt = failing_for("bad", world.sagemaker.start_attempt)  # type: ignore[method-assign]
    world.submit("bad", 9)
    world.submit("next", 0)
    assert world.job("bad").state is JobState.STARTING, "left as the failed start left it"
    assert world.job("next").state is JobState.PENDING, "the pool is held by the starting job"

    summary = world.reconcile()

    assert summary["job_errors"] == ["bad"]
    bad = world.job("bad")
    assert bad.state is JobState.PENDING
    assert bad.attempts[-1].outcome == "refused" and bad.not_before is not None
    assert summary["started"] == ["next"]


def test_a_start_that_always_fails_unexpectedly_ends_failed_within_the_retry_limits() -> None:
    world = World(capacity={POOL: 1}, retry_limits=StartRetryLimits(max_refusals=3, max_duration=timedelta(days=7)))
    world.sagemaker.start_attempt = failing_for("bad", world.sagemaker.start_attempt)  # type: ignore[method-assign]
    world.submit("bad", 0)

    for _ in range(10):
        if world.job("bad").state is JobState.FAILED:
            break
        world.later(BACKOFF_MAX.total_seconds())
        world.reconcile()

    bad = world.job("bad")
    assert bad.state is JobState.FAILED
    assert bad.start_failures == 3
    assert "RuntimeError" in (bad.reason or "")


def test_an_unexpected_error_applying_a_report_is_isolated_and_the_pass_goes_on() -> None:
    world = World(capacity={POOL: 2})
    world.submit("a", 0)
    world.progress("a", "InProgress")
    world.store.create(queued_job("b", priority=0, submitted_at=world.clock()))
    attempt = own_name(world, "a")
    world.sagemaker.set_status(attempt, "Completed")
    real_get = world.store.get
    world.store.get = failing_for("a", real_get)  # type: ignore[method-assign]

    summary = world.deliver(world.event(attempt))

    assert summary["job_errors"] == ["a"]
    assert summary["started"] == ["b"]
    world.store.get = real_get  # type: ignore[method-assign]
    world.reconcile()
    assert world.job("a").state is JobState.COMPLETED


def test_an_unexpected_error_reconciling_one_job_does_not_keep_the_others_from_repair() -> None:
    world = World(capacity={POOL: 2})
    world.submit("a", 0)
    world.submit("b", 0)
    for name in ("a", "b"):
        world.sagemaker.set_status(own_name(world, name), "Completed")
    world.sagemaker.describe = failing_for("a", world.sagemaker.describe)  # type: ignore[method-assign]

    summary = world.reconcile()

    assert summary["job_errors"] == ["a"]
    assert world.job("b").state is JobState.COMPLETED
    assert world.job("a").state is JobState.STARTING


def test_an_unexpected_error_in_a_preemption_is_isolated_and_reconciliation_sends_the_stop() -> None:
    world = World(capacity={POOL: 1, OTHER_POOL: 1})
    world.submit("low", 0)
    world.progress("low", "InProgress")
    low_attempt = own_name(world, "low")
    real_stop = world.sagemaker.stop
    world.sagemaker.stop = failing_for("low", real_stop)  # type: ignore[method-assign]
    world.store.create(queued_job("high", priority=5, submitted_at=world.clock()))
    world.store.create(queued_job("other", priority=0, submitted_at=world.clock(), pool=OTHER_POOL))

    summary = world.kick()

    assert summary["job_errors"] == ["low"]
    assert summary["started"] == ["other"]
    assert world.job("low").state is JobState.PREEMPTING
    world.sagemaker.stop = real_stop  # type: ignore[method-assign]
    world.reconcile()
    assert world.sagemaker.stop_calls == [low_attempt]


def test_an_unexpected_error_explaining_a_wait_is_isolated() -> None:
    world = World(capacity={POOL: 1, OTHER_POOL: 1})
    world.submit("running", 9)
    world.store.save = failing_for("waiting", world.store.save)  # type: ignore[method-assign]
    world.store.create(queued_job("waiting", priority=5, submitted_at=world.clock()))
    world.store.create(queued_job("other", priority=0, submitted_at=world.clock(), pool=OTHER_POOL))

    summary = world.kick()

    assert summary["job_errors"] == ["waiting"]
    assert summary["started"] == ["other"]


def test_a_refusal_after_sixty_in_a_row_backs_off_at_the_ceiling_and_the_pass_goes_on() -> None:
    """Before the exponent was capped, this refusal overflowed after the job's `starting` write."""
    world = World(capacity={POOL: 1, OTHER_POOL: 1})
    flaky = world.store.create(queued_job("flaky", priority=9, submitted_at=world.clock()))
    world.store.save(replace(flaky, start_failures=60, version=flaky.version + 1), expected_version=flaky.version)
    world.sagemaker.refuse("flaky", "InsufficientCapacityError: none left", lasting=False)
    world.store.create(queued_job("other", priority=0, submitted_at=world.clock(), pool=OTHER_POOL))

    summary = world.kick()

    flaky = world.job("flaky")
    assert flaky.state is JobState.PENDING
    assert flaky.not_before == world.clock() + BACKOFF_MAX
    assert summary["started"] == ["other"]
    assert summary["job_errors"] == []


def test_a_job_refused_too_many_times_in_a_row_fails_with_the_last_reason() -> None:
    world = World(capacity={POOL: 1}, retry_limits=StartRetryLimits(max_refusals=3, max_duration=timedelta(days=7)))
    world.sagemaker.refuse("flaky", "ThrottlingException: slow down", lasting=False)
    world.submit("flaky", 0)

    for _ in range(10):
        job = world.job("flaky")
        if job.state is JobState.FAILED:
            break
        assert job.not_before is not None
        world.clock.set(job.not_before)
        world.kick()

    flaky = world.job("flaky")
    assert flaky.state is JobState.FAILED
    assert (flaky.reason or "").endswith("ThrottlingException: slow down")
    assert len(world.sagemaker.start_calls) == 3


# ---------------------------------------------------------------- an ambiguous create


def test_an_ambiguous_create_that_did_not_happen_keeps_the_attempt_open_until_reconciliation() -> None:
    world = World(capacity={POOL: 1})
    world.sagemaker.lose_answer("a", created=False)
    world.store.create(queued_job("a", priority=0, submitted_at=world.clock()))

    summary = world.kick()

    assert summary["unconfirmed"] == ["a"] and summary["refused"] == [] and summary["started"] == []
    job = world.job("a")
    assert job.state is JobState.STARTING
    assert [attempt.is_open for attempt in job.attempts] == [True]
    world.submit("b", 0)
    assert world.job("b").state is JobState.PENDING, "the open attempt keeps its instances"

    world.reconcile()

    name = own_name(world, "a")
    assert world.sagemaker.start_calls == [name, name], "created again under the same name"
    assert name in world.sagemaker.jobs
    world.progress("a", "InProgress")
    assert world.job("a").state is JobState.RUNNING
    assert world.job("a").current_attempt.number == 1  # type: ignore[union-attr]


def test_an_ambiguous_create_that_did_happen_is_found_by_reconciliation_and_never_started_twice() -> None:
    world = World(capacity={POOL: 1})
    world.sagemaker.lose_answer("a", created=True)
    world.submit("a", 0)
    for _ in range(3):
        world.kick()

    world.reconcile()

    name = own_name(world, "a")
    assert world.sagemaker.start_calls == [name]
    assert world.job("a").state is JobState.RUNNING
    assert len(world.job("a").attempts) == 1


# ---------------------------------------------------------------- what every invocation measures


@pytest.mark.parametrize(("minutes", "stuck"), [(14, 0), (16, 1)])
def test_every_invocation_counts_the_jobs_stuck_between_two_states(minutes: int, stuck: int) -> None:
    world = World(capacity={POOL: 1})
    world.submit("low", 0)
    world.progress("low", "InProgress")
    world.submit("high", 5)
    low = world.job("low")
    assert low.state is JobState.PREEMPTING and low.updated_at is not None
    world.clock.set(low.updated_at + timedelta(minutes=minutes))  # SageMaker never finishes the stop

    assert world.kick()["stuck"] == stuck
    assert world.reconcile()["stuck"] == stuck
    assert world.lease.try_acquire("another-pass", world.clock())
    busy = world.kick()
    assert busy["busy"] is True
    assert busy["stuck"] == stuck


def test_each_pass_publishes_the_usage_it_measured_including_its_own_starts() -> None:
    world = World(capacity={POOL: 3, OTHER_POOL: 1})
    world.sagemaker.external = {POOL: 1}
    world.reconcile()
    world.submit("running", 0, instances=1)
    world.progress("running", "InProgress")
    world.store.create(queued_job("started-now", priority=0, submitted_at=world.clock()))
    world.store.create(queued_job("waits", priority=0, submitted_at=world.clock(), instances=2))
    world.config.config = replace(world.config.config, unpooled=UnpooledPolicy.UNLIMITED)
    world.store.create(queued_job("unpooled", priority=0, submitted_at=world.clock(), pool="ml.c5.xlarge", instances=4))

    summary = world.kick()

    assert sorted(summary["started"]) == ["started-now", "unpooled"]
    latest = world.pass_summaries.latest()
    assert latest is not None and latest.measured_at == world.clock()
    assert latest.pools == (
        PoolMeasure(pool=POOL, capacity=3, in_use=3, head="waits"),
        PoolMeasure(pool=OTHER_POOL, capacity=1, in_use=0),
        PoolMeasure(pool="ml.c5.xlarge", capacity=None, in_use=4),
    )


def test_a_refused_start_is_published_as_not_in_use() -> None:
    world = World(capacity={POOL: 1})
    world.sagemaker.refuse("a", "ThrottlingException: slow down", lasting=False)

    world.submit("a", 0)

    latest = world.pass_summaries.latest()
    assert latest is not None
    assert latest.pools == (PoolMeasure(pool=POOL, capacity=1, in_use=0),)


@pytest.mark.parametrize(
    ("tagged_job", "tagged_attempt"),
    [("#scheduler-lease", "1"), ("#pool-usage", "1"), ("victim", "²"), ("victim", "-1"), ("", "1")],
)
def test_tags_that_cannot_name_a_queue_attempt_mark_a_job_outside_the_queue(
    tagged_job: str, tagged_attempt: str
) -> None:
    world = World(capacity={POOL: 1})
    world.store.create(queued_job("victim", priority=0, submitted_at=world.clock()))
    event = started_outside_the_queue(world, "forged", "Completed", tagged_job="victim", tagged_attempt=1)
    event["detail"]["Tags"] = {"smq:job": tagged_job, "smq:attempt": tagged_attempt}

    summary = world.deliver(event)

    assert summary["job_errors"] == []
    assert summary["started"] == ["victim"]
