"""QueueService over the in-memory fakes: races with scheduler passes and capacity used outside the queue."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import VersionConflict
from smq_lambda.handlers.api import create_app, lambda_handler
from smq_lambda.service.queue_api import WRITE_ATTEMPTS, QueueService
from smq_lambda.service.scheduler import Scheduler, SchedulerPorts

from tests.api.builders import ALICE, G5, P5, POOLS, training_request
from tests.api.gateway import ApiGateway
from tests.support.fake_lease import InMemoryPassLease
from tests.support.fakes import (
    FakeClock,
    FakeConfigSource,
    FakeTrainingService,
    InMemoryJobStore,
    InMemoryPassSummaries,
    RecordingTrigger,
)


class RacingStore(InMemoryJobStore):
    """Lets a scheduler pass write the job just before each of the service's next `races` saves."""

    def __init__(self, competing: Callable[[Job, datetime], Job], races: int, clock: FakeClock) -> None:
        super().__init__()
        self.competing = competing
        self.races = races
        self.clock = clock
        self.saves = 0

    def save(self, job: Job, *, expected_version: int) -> Job:
        self.saves += 1
        if self.races > 0:
            self.races -= 1
            current = self.get(job.name)
            assert current is not None
            super().save(self.competing(current, self.clock()), expected_version=current.version)
        return super().save(job, expected_version=expected_version)


def service_over(store: InMemoryJobStore, clock: FakeClock, **kwargs: Any) -> QueueService:
    return QueueService(store, FakeConfigSource(POOLS), RecordingTrigger(), clock=clock, **kwargs)


def explain(job: Job, now: datetime) -> Job:
    return lifecycle.explain(job, now, "waiting for capacity")


def test_a_priority_change_that_loses_a_race_is_decided_again() -> None:
    clock = FakeClock()
    store = RacingStore(explain, races=1, clock=clock)
    service = service_over(store, clock)
    service.submit(training_request("job"), ALICE)

    changed = service.change_priority("job", 7, ALICE).job

    assert (changed.priority, changed.reason, store.saves) == (7, "waiting for capacity", 2)


def test_a_cancel_that_loses_to_a_start_stops_the_new_attempt() -> None:
    clock = FakeClock()
    store = RacingStore(lambda job, now: lifecycle.start(job, now, reason="capacity free"), races=1, clock=clock)
    service = service_over(store, clock)
    service.submit(training_request("job"), ALICE)

    cancelled = service.cancel("job", ALICE).job

    assert cancelled.state is JobState.STOPPING
    assert cancelled.current_attempt is not None and cancelled.current_attempt.is_open


def test_a_job_that_keeps_changing_is_a_conflict() -> None:
    clock = FakeClock()
    store = RacingStore(explain, races=WRITE_ATTEMPTS, clock=clock)
    service = service_over(store, clock)
    service.submit(training_request("job"), ALICE)

    with pytest.raises(VersionConflict):
        service.change_priority("job", 7, ALICE)
    stored = store.get("job")
    assert stored is not None and stored.priority == 0


def test_through_the_api_a_job_that_keeps_changing_answers_409() -> None:
    clock = FakeClock()
    store = RacingStore(explain, races=0, clock=clock)
    service = service_over(store, clock)
    app = create_app(service)
    api = ApiGateway(lambda_handler(lambda: app))
    api.add(training_request("job"))
    store.races = WRITE_ATTEMPTS

    reply = api.set_priority("job", 7)

    assert (reply.status, reply.field) == (409, "name")


def test_pools_show_the_usage_a_pass_measured_with_jobs_started_outside_the_queue() -> None:
    clock = FakeClock()
    store = InMemoryJobStore()
    summaries = InMemoryPassSummaries()
    training = FakeTrainingService(external={G5: 2, "ml.c5.xlarge": 5}, clock=clock)
    service = service_over(store, clock, pass_summaries=summaries)
    scheduler = Scheduler(
        SchedulerPorts(
            store=store,
            training=training,
            config=FakeConfigSource(POOLS),
            lease=InMemoryPassLease(),
            clock=clock,
            pass_summaries=summaries,
        )
    )
    service.submit(training_request("job", instances=1), ALICE)
    service.submit(training_request("waits", instances=2), ALICE)
    assert service.pools().measured_at is None

    scheduler.reconcile()
    scheduler.schedule()
    pools = service.pools()

    assert {pool.pool: (pool.capacity, pool.in_use, pool.pending) for pool in pools.pools} == {
        G5: (4, 3, 1),
        P5: (2, 0, 0),
    }
    assert pools.measured_at == clock()
