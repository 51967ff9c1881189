"""The scheduler's use cases through the Lambda handler, against in-memory fakes of every port."""

from __future__ import annotations

from datetime import timedelta

import pytest
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import ServiceUnavailable, TrainingServiceError

from tests.service.harness import POOL, World, queued_job


def test_seed_scenario_preempts_the_lowest_priority_job_and_resumes_it_before_later_equals() -> None:
    world = World(capacity={POOL: 2})
    world.submit("job1", 1)
    world.submit("job2", 2)
    world.progress("job1", "InProgress")
    world.progress("job2", "InProgress")
    world.submit("job3", 1)
    world.submit("job4", 3)

    assert world.states() == {"job1": "preempting", "job2": "running", "job3": "pending", "job4": "pending"}
    assert "job4" in (world.job("job1").reason or "")

    world.finish_stops()
    assert world.states()["job4"] == "starting"
    assert world.states()["job1"] == "pending"
    world.progress("job4", "InProgress")

    world.progress("job2", "Completed")
    assert world.states() == {"job1": "starting", "job2": "completed", "job3": "pending", "job4": "running"}
    job1 = world.job("job1")
    assert [a.outcome for a in job1.attempts] == ["preempted", None]
    assert job1.attempts[0].training_job_name != job1.attempts[1].training_job_name

    world.progress("job1", "InProgress")
    world.progress("job4", "Completed")
    world.progress("job3", "InProgress")
    world.progress("job1", "Completed")
    world.progress("job3", "Completed")
    assert set(world.states().values()) == {"completed"}


def test_duplicate_and_late_events_change_nothing() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    attempt = world.job("a").current_attempt
    assert attempt is not None
    world.sagemaker.set_status(attempt.training_job_name, "InProgress")
    in_progress = world.event(attempt.training_job_name)
    world.deliver(in_progress)
    world.progress("a", "Completed")
    done = world.job("a")

    world.deliver(in_progress)
    world.deliver(world.event(attempt.training_job_name))

    assert world.job("a") == done
    assert done.state is JobState.COMPLETED


def test_an_event_of_an_old_attempt_does_not_touch_the_current_one() -> None:
    world = World(capacity={POOL: 1})
    world.submit("low", 1)
    world.progress("low", "InProgress")
    first = world.job("low").attempts[0].training_job_name
    world.submit("high", 5)
    world.finish_stops()
    stale_stopped = world.event(first)
    world.progress("high", "Completed")
    assert world.job("low").state is JobState.STARTING

    world.deliver(stale_stopped)

    assert world.job("low").state is JobState.STARTING
    assert world.job("low").current_attempt.number == 2  # type: ignore[union-attr]


def test_a_lasting_refusal_fails_that_job_and_the_next_one_starts_in_the_same_call() -> None:
    world = World(capacity={POOL: 1})
    world.sagemaker.refuse("bad", "ValidationException: role cannot be assumed", lasting=True)
    world.submit("good", 0)
    world.progress("good", "Completed")
    world.submit("bad", 9)
    world.submit("next", 0)

    bad = world.job("bad")
    assert bad.state is JobState.FAILED
    assert "role cannot be assumed" in (bad.reason or "")
    assert world.job("next").state is JobState.STARTING


def test_a_transient_refusal_backs_off_without_blocking_the_pool() -> None:
    world = World(capacity={POOL: 1})
    world.sagemaker.refuse("flaky", "ThrottlingException: slow down", lasting=False, times=1)
    world.submit("flaky", 9)
    flaky = world.job("flaky")
    assert flaky.state is JobState.PENDING
    assert flaky.not_before is not None and "retrying" in (flaky.reason or "")

    world.submit("other", 0)
    assert world.job("other").state is JobState.STARTING
    world.progress("other", "Completed")

    world.clock.set(flaky.not_before + timedelta(seconds=1))
    world.kick()
    assert world.job("flaky").state is JobState.STARTING
    assert world.job("flaky").start_failures == 1


def test_cancelling_a_running_job_stops_it_and_ends_cancelled() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    world.progress("a", "InProgress")
    job = world.job("a")
    world.store.save(
        lifecycle.request_stop(job, world.clock(), preempt=False, reason="cancelled by alice"),
        expected_version=job.version,
    )

    world.kick()
    assert world.sagemaker.stop_calls == [job.current_attempt.training_job_name]  # type: ignore[union-attr]
    world.finish_stops()

    cancelled = world.job("a")
    assert cancelled.state is JobState.CANCELLED
    assert cancelled.reason == "cancelled by alice"
    assert cancelled.attempts[-1].outcome == "stopped"


def test_reconciliation_repairs_a_lost_completion_and_starts_the_next_job() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    world.progress("a", "InProgress")
    world.submit("b", 0)
    world.sagemaker.set_status(world.job("a").attempts[0].training_job_name, "Completed")

    world.reconcile()

    assert world.states() == {"a": "completed", "b": "starting"}


def test_reconciliation_recreates_a_starting_attempt_that_sagemaker_never_got() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    name = world.job("a").attempts[0].training_job_name
    del world.sagemaker.jobs[name]

    world.reconcile()

    assert name in world.sagemaker.jobs
    assert world.sagemaker.start_calls == [name, name]
    assert world.job("a").current_attempt.number == 1  # type: ignore[union-attr]


def test_reconciliation_resends_a_stop_that_was_lost() -> None:
    world = World(capacity={POOL: 1})
    world.submit("low", 0)
    world.progress("low", "InProgress")
    world.submit("high", 1)
    name = world.job("low").attempts[0].training_job_name
    world.sagemaker.set_status(name, "InProgress")

    world.reconcile()

    assert world.sagemaker.stop_calls.count(name) == 2


def test_an_attempt_still_running_after_its_job_moved_on_is_stopped() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    job = world.job("a")
    world.store.save(
        lifecycle.finish(job, JobState.CANCELLED, world.clock(), outcome="stopped", reason="gone"),
        expected_version=job.version,
    )
    name = job.attempts[0].training_job_name
    world.sagemaker.set_status(name, "InProgress")

    world.deliver(world.event(name))

    assert world.sagemaker.stop_calls == [name]


def test_max_runtime_exceeded_fails_the_job() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    world.progress("a", "InProgress")
    world.progress("a", "Stopped", secondary_status="MaxRuntimeExceeded")

    job = world.job("a")
    assert job.state is JobState.FAILED
    assert "MaxRuntimeInSeconds" in (job.reason or "")


def test_failure_reason_is_kept() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    world.progress("a", "Failed", failure_reason="AlgorithmError: exit code 1")
    assert (world.job("a").reason or "").startswith("AlgorithmError: exit code 1; not retried")
    assert world.job("a").attempts[-1].outcome == "failed"


def test_a_pass_that_finds_the_lease_taken_leaves_a_rerun_for_the_holder() -> None:
    world = World(capacity={POOL: 1})
    assert world.lease.try_acquire("other-pass", world.clock())
    world.store.create(_pending(world, "a"))

    summary = world.kick()

    assert summary["busy"] is True
    assert world.job("a").state is JobState.PENDING
    assert world.lease.release("other-pass") is False, "the holder must be told to run again"


def _pending(world: World, name: str) -> Job:
    return queued_job(name, priority=0, submitted_at=world.clock())


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"source": "aws.sagemaker", "detail-type": "SageMaker Training Job State Change", "detail": {}},
        {
            "source": "aws.sagemaker",
            "detail-type": "SageMaker Training Job State Change",
            "detail": {"TrainingJobName": "x"},
        },
        {"source": "unknown"},
    ],
)
def test_malformed_or_foreign_events_still_get_a_pass_and_never_raise(event: dict) -> None:
    world = World(capacity={POOL: 1})
    world.store.create(_pending(world, "a"))

    summary = world.deliver(event)

    assert summary["started"] == ["a"]


def test_events_of_jobs_outside_the_queue_are_ignored_but_trigger_a_pass() -> None:
    world = World(capacity={POOL: 1})
    world.store.create(_pending(world, "a"))
    event = {
        "version": "0",
        "id": "1",
        "detail-type": "SageMaker Training Job State Change",
        "source": "aws.sagemaker",
        "account": "000000000000",
        "time": "2024-01-01T00:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {"TrainingJobName": "manual-job", "TrainingJobStatus": "Completed", "Tags": {}},
    }
    assert world.deliver(event)["started"] == ["a"]


def test_a_pass_that_fails_gives_the_lease_up_so_the_next_pass_can_run() -> None:
    world = World(capacity={POOL: 1})
    world.store.create(_pending(world, "a"))

    def broken(*_: object) -> None:
        raise ServiceUnavailable("DynamoDB", "ThrottlingException", "slow down")

    world.store.in_use = broken  # type: ignore[method-assign]
    with pytest.raises(ServiceUnavailable):
        world.kick()
    del world.store.in_use

    assert world.kick()["started"] == ["a"]


def test_a_stop_that_fails_does_not_abort_the_pass_and_is_sent_again_later() -> None:
    world = World(capacity={POOL: 1})
    world.submit("low", 0)
    world.progress("low", "InProgress")
    name = world.job("low").attempts[0].training_job_name
    real_stop = world.sagemaker.stop

    def throttled(training_job_name: str) -> None:
        raise TrainingServiceError("StopTrainingJob", "ThrottlingException", "slow down")

    world.sagemaker.stop = throttled  # type: ignore[method-assign]
    world.submit("high", 5)
    assert world.job("low").state is JobState.PREEMPTING
    world.sagemaker.stop = real_stop  # type: ignore[method-assign]

    world.reconcile()

    assert world.sagemaker.stop_calls == [name]
    world.finish_stops()
    assert world.job("high").state is JobState.STARTING
