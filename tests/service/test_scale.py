"""A pass costs the same however deep the queue: what it reads and writes is bounded by capacity and
the look-ahead, live jobs are counted exactly even when the index lags, and jobs outside the queue
are known from their events, with no listing of SageMaker on the pass path."""

from __future__ import annotations

from typing import Any

import pytest
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.ports import JobStore
from smq_lambda.scheduling.queue_front import SKIP_LOOKAHEAD

from tests.service.harness import POOL, World
from tests.support.fakes import InMemoryJobStore

CAPACITY = 4


class CountingStore(InMemoryJobStore):
    """Counts saves, so a test can bound what a pass writes."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.saves: list[str] = []

    def save(self, job, *, expected_version):  # type: ignore[no-untyped-def]
        self.saves.append(job.name)
        return super().save(job, expected_version=expected_version)


class CountingTraining:
    """Wraps the fake SageMaker to count the listings of every training job."""

    def __init__(self, world: World) -> None:
        self.listings = 0
        original = world.sagemaker.outside_in_progress

        def counted(queue_attempts: Any) -> dict[str, dict[str, int]]:
            self.listings += 1
            return original(queue_attempts)

        world.sagemaker.outside_in_progress = counted  # type: ignore[method-assign]


def deep_queue(depth: int, store: JobStore | None = None) -> World:
    """A full pool (CAPACITY jobs running) with `depth` jobs pending behind them."""
    world = World(capacity={POOL: CAPACITY}, store=store or CountingStore())
    for index in range(CAPACITY):
        world.submit(f"run-{index}", 5)
        world.progress(f"run-{index}", "InProgress")
    world.store.front_reads = 0  # type: ignore[attr-defined]
    for index in range(depth):
        world.store.create(_queued(world, f"wait-{index:05d}", priority=index % 3))
    return world


def _queued(world: World, name: str, *, priority: int):  # type: ignore[no-untyped-def]
    from tests.service.harness import queued_job

    world.clock.advance(seconds=1)
    return queued_job(name, priority=priority, submitted_at=world.clock())


@pytest.mark.parametrize("depth", [100, 1000])
def test_a_steady_pass_reads_the_same_few_pending_jobs_and_writes_no_more_at_any_depth(depth: int) -> None:
    world = deep_queue(depth)
    world.kick()
    store: CountingStore = world.store  # type: ignore[assignment]
    store.saves.clear()
    store.front_reads = 0

    world.kick()

    assert store.front_reads == 1 + SKIP_LOOKAHEAD, "the pool is full: the head and the look-ahead"
    assert store.saves == [], "nothing changed, nothing is written"


@pytest.mark.parametrize("depth", [100, 1000])
def test_after_one_completion_a_pass_writes_the_started_job_and_the_new_head_only(depth: int) -> None:
    world = deep_queue(depth)
    world.kick()
    store: CountingStore = world.store  # type: ignore[assignment]
    store.saves.clear()

    world.progress("run-0", "Completed")

    started = [job for job in world.all_jobs() if job.state is JobState.STARTING]
    assert len(started) == 1
    assert len(store.saves) <= 4, store.saves  # the completion, the start, the new head's reason


def test_a_job_that_just_started_but_still_looks_pending_in_the_index_is_neither_started_again_nor_counted_free() -> (
    None
):
    world = World(capacity={POOL: 1}, store=InMemoryJobStore(index_lag=2))
    for name, priority in (("first", 1), ("second", 5), ("third", 5)):
        world.store.create(_queued(world, name, priority=priority))
    world.kick()  # the index shows only "first" yet
    assert world.job("first").state is JobState.STARTING
    (shown,) = [job for job in world.store.pending_front(POOL, 10) if job.name == "first"]
    assert shown.state is JobState.PENDING, "the index has not caught up with the start"

    world.kick()  # "second" outranks "first", which the index still shows as pending
    world.kick()

    assert world.job("second").state is JobState.PENDING, (
        "it waits for the instance first holds, never starts beside it"
    )
    assert world.sagemaker.start_calls == [world.job("first").current_attempt.training_job_name]


def outside_event(world: World, name: str, status: str, instances: int) -> dict[str, Any]:
    """A state change of a training job someone started with boto3, as EventBridge delivers it."""
    return {
        "version": "0",
        "id": f"{name}-{status}",
        "detail-type": "SageMaker Training Job State Change",
        "source": "aws.sagemaker",
        "account": "000000000000",
        "time": world.clock().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": [f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{name}"],
        "detail": {
            "TrainingJobName": name,
            "TrainingJobStatus": status,
            "SecondaryStatus": "Training" if status == "InProgress" else status,
            "ResourceConfig": {"InstanceType": POOL, "InstanceCount": instances, "VolumeSizeInGB": 30},
            "Tags": {"team": "research"},
        },
    }


def test_jobs_outside_the_queue_hold_instances_from_their_events_without_listing_sagemaker() -> None:
    world = World(capacity={POOL: 4})
    counting = CountingTraining(world)
    world.deliver(outside_event(world, "notebook-run", "InProgress", 3))

    world.submit("needs-two", 5, instances=2)
    assert world.job("needs-two").state is JobState.PENDING
    world.deliver(outside_event(world, "notebook-run", "InProgress", 3))  # a duplicate changes nothing
    assert world.job("needs-two").state is JobState.PENDING

    world.deliver(outside_event(world, "notebook-run", "Completed", 3))

    assert world.job("needs-two").state is JobState.STARTING
    assert counting.listings == 0, "passes and reports never list SageMaker"


def test_reconciliation_corrects_an_outside_job_whose_end_was_lost() -> None:
    world = World(capacity={POOL: 4})
    world.deliver(outside_event(world, "notebook-run", "InProgress", 4))
    world.submit("waits", 5)
    assert world.job("waits").state is JobState.PENDING

    world.reconcile()  # SageMaker lists no busy job outside the queue: the Completed event was lost

    assert world.job("waits").state is JobState.STARTING


def test_reconciliation_adds_an_outside_job_whose_start_was_lost() -> None:
    world = World(capacity={POOL: 2})
    world.sagemaker.external[POOL] = 2

    world.reconcile()
    world.submit("waits", 5)

    assert world.job("waits").state is JobState.PENDING


def test_a_training_job_wearing_a_queue_jobs_tags_holds_instances_like_any_job_outside_the_queue() -> None:
    world = World(capacity={POOL: 4})
    world.submit("victim", 1)
    forged = outside_event(world, "forged-run", "InProgress", 3)
    forged["detail"]["Tags"] = {"smq:job": "victim", "smq:attempt": "1"}

    world.deliver(forged)
    world.submit("needs-two", 5, instances=2)

    assert world.job("needs-two").state is JobState.PENDING
    assert world.job("victim").state is JobState.STARTING, "the forged event changed nothing of the job"


def test_a_late_busy_event_of_an_attempt_that_already_ended_changes_nothing() -> None:
    """Batched and reordered, a job's InProgress event may arrive after its Completed one: its
    instances are not counted as held outside the queue."""
    world = World(capacity={POOL: 1})
    world.submit("quick", 5)
    world.progress("quick", "InProgress")
    late = world.event(world.job("quick").current_attempt.training_job_name)
    world.progress("quick", "Completed")

    world.deliver(late)
    world.submit("next", 5)

    assert world.job("next").state is JobState.STARTING, "the instance is free"
