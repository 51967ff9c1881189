"""Listeners hear of each own attempt's end in SageMaker, duplicates included, and of nothing else;
each on its own, so one that fails keeps no other from hearing."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.handlers.scheduler import handle_batch

from tests.service.harness import POOL, World, started_outside_the_queue
from tests.support.sqs import batch


@dataclass
class RecordingListener:
    heard: list[tuple[str, int, str, str]] = field(default_factory=list)

    def on_training_end(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        self.heard.append((job.name, attempt_number, status.name, status.status))


@dataclass
class FailingListener:
    """Raises `error` the first `times` times it is told (every time: None)."""

    error: Exception
    times: int | None = None
    told: int = 0

    def on_training_end(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        self.told += 1
        if self.times is None or self.told <= self.times:
            raise self.error


def completed(world: World, name: str) -> str:
    """`name` ran and completed in SageMaker; returns its training job's name (not yet reported)."""
    world.submit(name, 0)
    world.progress(name, "InProgress")
    attempt = world.job(name).current_attempt
    assert attempt is not None
    world.sagemaker.set_status(attempt.training_job_name, "Completed")
    return attempt.training_job_name


@pytest.mark.parametrize("end", ["Completed", "Failed", "Stopped"])
def test_an_attempts_end_is_told_after_the_jobs_write_and_again_on_a_duplicate(end: str) -> None:
    listener = RecordingListener()
    world = World(capacity={POOL: 1}, training_end_listeners=[listener])
    world.submit("a", 0)
    world.progress("a", "InProgress")
    assert listener.heard == []
    attempt = world.job("a").current_attempt
    assert attempt is not None

    world.progress("a", end)
    world.deliver(world.event(attempt.training_job_name))

    assert listener.heard == [("a", 1, attempt.training_job_name, end)] * 2


def test_a_preempted_attempts_stop_is_told_once_sagemaker_reports_it_stopped() -> None:
    listener = RecordingListener()
    world = World(capacity={POOL: 1}, training_end_listeners=[listener])
    world.submit("low", 0)
    world.progress("low", "InProgress")
    world.later(3600)
    first = world.job("low").current_attempt
    assert first is not None
    world.submit("high", 5)
    assert listener.heard == []

    world.finish_stops()

    assert listener.heard == [("low", 1, first.training_job_name, "Stopped")]


def test_a_training_job_outside_the_queue_wearing_a_jobs_tags_is_not_told() -> None:
    listener = RecordingListener()
    world = World(capacity={POOL: 1}, training_end_listeners=[listener])
    world.submit("a", 0)
    world.deliver(started_outside_the_queue(world, "forged", "Completed", tagged_job="a", tagged_attempt=1))
    assert listener.heard == []


def test_a_listener_that_fails_for_good_is_counted_the_others_are_told_and_the_report_is_not_redelivered() -> None:
    """A cost recorder whose write DynamoDB refuses (an item past its size) would fail the same way
    at every delivery: the warm-pool keeper after it is still told, the failure counts in JobErrors,
    and the report is not sent back to fail five times into the dead-letter queue."""
    failing, after = FailingListener(RuntimeError("ValidationException: item size")), RecordingListener()
    world = World(capacity={POOL: 1}, training_end_listeners=[failing, after])
    training_job = completed(world, "a")
    event = batch(world.event(training_job))

    summary = handle_batch(event, world.scheduler)

    assert after.heard == [("a", 1, training_job, "Completed")]
    assert summary["batchItemFailures"] == []
    assert summary["job_errors"] == ["a (FailingListener)"]
    assert world.states() == {"a": "completed"}


def test_a_listener_that_meets_a_throttled_table_is_told_again_when_the_report_is_redelivered() -> None:
    """Throttling passes: the report goes back to the queue, and its redelivery tells every listener
    again (each records idempotently, so the one that succeeded adds nothing)."""
    throttled = ServiceUnavailable("DynamoDB", "ThrottlingException", "Rate exceeded")
    failing, after = FailingListener(throttled, times=1), RecordingListener()
    world = World(capacity={POOL: 1}, training_end_listeners=[failing, after])
    training_job = completed(world, "a")
    event = batch(world.event(training_job))

    first = handle_batch(event, world.scheduler)
    again = handle_batch(event, world.scheduler)

    assert first["batchItemFailures"] == [{"itemIdentifier": event["Records"][0]["messageId"]}]
    assert first["job_errors"] == ["a"]
    assert (again["batchItemFailures"], again["job_errors"]) == ([], [])
    assert failing.told == 2
    assert after.heard == [("a", 1, training_job, "Completed")] * 2


def test_reconciliation_that_finds_an_end_tells_every_listener_and_counts_the_one_that_failed() -> None:
    failing, after = FailingListener(RuntimeError("a bug")), RecordingListener()
    world = World(capacity={POOL: 1}, training_end_listeners=[failing, after])
    training_job = completed(world, "a")  # its event lost

    summary = world.reconcile()

    assert after.heard == [("a", 1, training_job, "Completed")]
    assert summary["job_errors"] == ["a"]
    assert world.states() == {"a": "completed"}
