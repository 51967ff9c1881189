"""Listeners hear of each own attempt's end in SageMaker, duplicates included, and of nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from smq_lambda.domain.model import Job
from smq_lambda.domain.training_report import TrainingJobStatus

from tests.service.harness import POOL, World, started_outside_the_queue


@dataclass
class RecordingListener:
    heard: list[tuple[str, int, str, str]] = field(default_factory=list)

    def on_training_end(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        self.heard.append((job.name, attempt_number, status.name, status.status))


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
