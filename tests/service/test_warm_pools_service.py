"""Warm pools through the scheduler: a finished attempt's `Available` warm pool is recorded and held
in its pool; a matching job starts on it; a job ahead that does not match ends it (UpdateTrainingJob)
and waits for its instances; `Reused` or `Terminated` ends it once, whatever reports repeat."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from smq_lambda.domain.config.warm_pool_document import WarmPoolPolicy
from smq_lambda.domain.sagemaker.warm_pool_status import WarmPoolStatus
from smq_lambda.domain.warm.warm_pools import warm_key_of
from smq_lambda.service.scheduler import Scheduler, SchedulerPorts

from tests.service.harness import POOL, World, queued_job
from tests.support.fake_warm_pools import InMemoryWarmPools

KEEP_ALIVE_S = 600


@dataclass
class WarmWorld(World):
    warm: InMemoryWarmPools = field(default_factory=InMemoryWarmPools)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.scheduler = Scheduler(
            SchedulerPorts(
                store=self.store,
                training=self.sagemaker,
                config=self.config,
                lease=self.lease,
                clock=self.clock,
                pass_summaries=self.pass_summaries,
                warm_pools=self.warm,
            )
        )

    def submit_keeping(self, name: str, priority: int, *, volume_gb: int = 30, kick: bool = True) -> None:
        """A job whose request keeps its instances warm for KEEP_ALIVE_S (a pass follows, if `kick`)."""
        self.clock.advance(seconds=1)
        job = queued_job(name, priority=priority, submitted_at=self.clock())
        request: dict[str, Any] = copy.deepcopy(dict(job.request))
        request["ResourceConfig"].update(KeepAlivePeriodInSeconds=KEEP_ALIVE_S, VolumeSizeInGB=volume_gb)
        self.store.create(replace(job, request=request, warm_key=warm_key_of(request)))
        if kick:
            self.kick()

    def warm_report(self, job_name: str, status: str, **more: Any) -> None:
        """SageMaker reports the warm pool of `job_name`'s current attempt, completing it first."""
        attempt = self.job(job_name).current_attempt
        assert attempt is not None
        self.sagemaker.set_status(attempt.training_job_name, "Completed")
        event = self.event(attempt.training_job_name)
        event["detail"]["WarmPoolStatus"] = {"Status": status, **more}
        self.deliver(event)


def finished_keeping_warm(world: WarmWorld) -> str:
    """`first` ran and completed, its instance kept warm; returns its training job's name."""
    world.submit_keeping("first", 0)
    world.progress("first", "InProgress")
    world.warm_report("first", "Available")
    attempt = world.job("first").current_attempt
    assert attempt is not None
    return attempt.training_job_name


def test_an_available_warm_pool_is_recorded_and_holds_its_instances() -> None:
    world = WarmWorld(capacity={POOL: 1})
    left = finished_keeping_warm(world)
    [warm] = world.warm.available(world.clock())
    assert (warm.training_job_name, warm.pool, warm.count) == (left, POOL, 1)
    assert warm.available_until <= world.clock() + timedelta(seconds=KEEP_ALIVE_S)
    world.warm_report("first", "Available")
    assert len(world.warm.held) == 1


def test_a_matching_job_starts_on_the_warm_pool() -> None:
    world = WarmWorld(capacity={POOL: 1})
    left = finished_keeping_warm(world)
    world.submit_keeping("second", 0)
    second = world.job("second")
    assert str(second.state) == "starting"
    assert f"starts on the warm pool {left} left" in (second.reason or "")
    assert world.sagemaker.warm_pool_ends == []


def test_a_job_that_does_not_match_ends_the_warm_pool_and_waits_for_its_instances() -> None:
    world = WarmWorld(capacity={POOL: 1})
    left = finished_keeping_warm(world)
    world.submit_keeping("bigger-disk", 0, volume_gb=500)
    assert str(world.job("bigger-disk").state) == "pending"
    assert world.sagemaker.warm_pool_ends == [left]
    assert [warm.released for warm in world.warm.available(world.clock())] == [True]

    world.kick()
    assert world.sagemaker.warm_pool_ends == [left], "a released warm pool is not ended twice"

    world.warm_report("first", "Terminated", ResourceRetainedBillableTimeInSeconds=30)
    world.kick()
    assert str(world.job("bigger-disk").state) == "starting"
    assert world.warm.totals().retained == 1
    assert world.warm.totals().reused == 0


def test_a_reused_warm_pool_ends_once_and_counts_as_reused() -> None:
    world = WarmWorld(capacity={POOL: 1})
    finished_keeping_warm(world)
    world.submit_keeping("second", 0)
    world.warm_report("first", "Reused", ResourceRetainedBillableTimeInSeconds=45, ReusedByJob="second-x-1")
    world.warm_report("first", "Reused", ResourceRetainedBillableTimeInSeconds=45, ReusedByJob="second-x-1")
    world.warm_report("first", "Available")
    totals = world.warm.totals()
    assert (totals.retained, totals.reused, totals.retained_instance_s, totals.reuse_rate) == (1, 1, 45, 1.0)
    assert world.warm.available(world.clock()) == []


def test_with_a_policy_a_start_keeps_warm_only_while_a_match_waits() -> None:
    world = WarmWorld(capacity={POOL: 1})
    world.config.config = replace(world.config.config, warm_pools=WarmPoolPolicy(max_keep_alive_s=300))
    world.submit_keeping("first", 0, kick=False)
    world.submit_keeping("second", 0)
    first, second = world.job("first").current_attempt, world.job("second")
    assert first is not None and first.keep_alive_s == 300
    created = world.sagemaker.jobs[first.training_job_name].request
    assert created["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 300
    assert str(second.state) == "pending"

    world.progress("first", "InProgress")
    world.warm_report("first", "Available")
    last = world.job("second").current_attempt
    assert last is not None and last.keep_alive_s == 1, "it starts on the warm pool; nothing waits after it"


def test_reconciliation_ends_a_warm_pool_whose_end_no_event_told() -> None:
    world = WarmWorld(capacity={POOL: 1})
    left = finished_keeping_warm(world)
    world.sagemaker.jobs[left].warm_pool = WarmPoolStatus("Reused", 20, "another-job")
    world.reconcile()
    assert world.warm.available(world.clock()) == []
    assert world.warm.totals().reused == 1
