"""The checker of the queue against SageMaker names every rule a state breaks, and none for a sound
state: the fault and concurrency tests rely on it, so it must be able to fail."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState

from tests.scheduling.invariants import TrainingJobView, Violation, check_queue_against_sagemaker
from tests.service.harness import POOL, queued_job
from tests.support.fakes import EPOCH

CAPACITY = {POOL: 2}


def pending(name: str) -> Job:
    return queued_job(name, priority=0, submitted_at=EPOCH)


def started(name: str) -> Job:
    return lifecycle.start(pending(name), EPOCH, reason="capacity free")


def restarted(name: str) -> Job:
    """Preempted once, started again: attempt 1 closed, attempt 2 open."""
    preempted = lifecycle.requeue(started(name), EPOCH + timedelta(minutes=1), outcome="preempted", reason="preempted")
    return lifecycle.start(preempted, EPOCH + timedelta(minutes=2), reason="capacity free")


def training(job: Job, number: int = 1, status: str = "InProgress") -> TrainingJobView:
    """The training job of the job's attempt `number`."""
    attempt = job.attempts[number - 1]
    return TrainingJobView(attempt.training_job_name, status, job.name, attempt.number, dict(job.demand))


A, B, C = started("a"), started("b"), started("c")
A2 = restarted("a")
A_REQUEUED = replace(A2, state=JobState.PENDING, attempts=A2.attempts[:1])

CASES = [
    ("sound", [A, B, pending("c")], [training(A), training(B)], (), True, None),
    ("queue over capacity", [A, B, C], [training(A), training(B)], (), False, "queue: ml.p5.48xlarge uses 3 > 2"),
    ("SageMaker over capacity", [A, B, pending("c")], [training(A), training(B), training(C)], (), False,
     "SageMaker: ml.p5.48xlarge uses 3 > 2"),
    ("two busy attempts of one job", [A2], [training(A2, 1), training(A2, 2)], (), False, "a has 2 busy training jobs"),
    ("a training job no attempt records", [pending("a")], [training(A)], (), False, "is no recorded attempt of a"),
    ("a submitted job missing", [A], [training(A)], ("a", "b"), False, "b was submitted but is not in the table"),
    ("an open attempt of a pending job", [replace(A, state=JobState.PENDING)], [], (), False,
     "a is pending with open attempts [1]"),
    ("settled: a live job without its training job", [A], [], (), True, "its attempt"),
    ("settled: a live job whose training job ended", [A], [training(A, status="Completed")], (), True,
     "is Completed"),
    ("settled: a busy training job no live job owns", [A_REQUEUED], [training(A2, 1)], (), True,
     "is no live job's current attempt"),
    ("not settled: the sides may still disagree", [A_REQUEUED], [training(A2, 1)], (), False, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("jobs", "training_jobs", "submitted", "settled", "broken"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_the_checker_names_what_is_broken(
    jobs: list[Job], training_jobs: list[TrainingJobView], submitted: tuple[str, ...], settled: bool, broken: str | None
) -> None:
    def check() -> None:
        check_queue_against_sagemaker(jobs, training_jobs, CAPACITY, submitted=submitted, settled=settled)

    if broken is None:
        check()
        return
    with pytest.raises(Violation) as raised:
        check()
    assert broken in str(raised.value)


def test_a_training_job_view_reads_the_queue_tags_and_the_demand() -> None:
    request = {
        "ResourceConfig": {"InstanceType": POOL, "InstanceCount": 2},
        "Tags": [{"Key": "smq:job", "Value": "a"}, {"Key": "smq:attempt", "Value": "3"}],
    }

    view = TrainingJobView.of("a-1234abcd-3", "Stopping", request)
    outside = TrainingJobView.of("by-hand", "InProgress", {"ResourceConfig": {"InstanceType": POOL}})

    assert (view.job, view.attempt, dict(view.demand), view.busy) == ("a", 3, {POOL: 2}, True)
    assert (outside.job, outside.attempt, dict(outside.demand)) == (None, None, {POOL: 1})
