"""The shared fakes behave as their ports promise, and as the real adapter where both can be run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from smq_lambda.adapters.sagemaker import SageMakerTrainingService
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import StartRefused
from smq_lambda.ports import TrainingService
from smq_lambda.scheduling.snapshot import UnpooledPolicy

from tests.adapters.builders import G5, P5, T0, job
from tests.support.fakes import (
    EPOCH,
    FakeClock,
    FakeConfigSource,
    FakeTrainingService,
    InMemoryJobStore,
    RecordingTrigger,
)


def started(name: str, **kwargs: Any) -> Job:
    return lifecycle.start(job(name, **kwargs), T0, reason="fits")


# ------------------------------------------------------------------------ one contract, two services


@pytest.fixture(params=["fake", "moto"])
def training(request: pytest.FixtureRequest) -> TrainingService:
    if request.param == "fake":
        return FakeTrainingService()
    return SageMakerTrainingService(request.getfixturevalue("sagemaker_client"))


def test_a_started_attempt_can_be_described_by_its_name(training: TrainingService) -> None:
    current = started("contract-describe")
    name = current.attempts[0].training_job_name

    training.start_attempt(current)
    training.start_attempt(current)
    status = training.describe(name)

    assert status is not None
    assert status.name == name
    assert status.tags is None


def test_an_unknown_name_describes_as_none(training: TrainingService) -> None:
    assert training.describe("contract-nobody-1") is None


def test_stopping_an_unknown_name_is_quiet() -> None:
    """moto has no StopTrainingJob; the adapter's side is tested with botocore's Stubber."""
    fake = FakeTrainingService()

    fake.stop("nobody")

    assert fake.stop_calls == ["nobody"]


# ------------------------------------------------------------------------ FakeTrainingService


def test_a_repeated_start_records_the_call_but_creates_one_job() -> None:
    fake = FakeTrainingService()
    current = started("a", tags=[{"Key": "smq:job", "Value": "spoof"}, {"Key": "team", "Value": "x"}])

    fake.start_attempt(current)
    fake.start_attempt(current)

    name = current.attempts[0].training_job_name
    assert fake.start_calls == [name, name]
    assert list(fake.jobs) == [name]
    assert fake.jobs[name].tags == {"team": "x", "smq:job": "a", "smq:attempt": "1"}


def test_refusals_last_as_configured() -> None:
    fake = FakeTrainingService()
    fake.refuse("flaky", "ThrottlingException: slow down", lasting=False, times=2)
    fake.refuse("broken", "ValidationException: bad role", lasting=True)
    flaky, broken = started("flaky"), started("broken")

    outcomes = []
    for _ in range(3):
        try:
            fake.start_attempt(flaky)
        except StartRefused as refusal:
            outcomes.append(("refused", refusal.lasting))
        else:
            outcomes.append(("started", None))
    with pytest.raises(StartRefused) as lasting:
        fake.start_attempt(broken)
    fake.allow("broken")
    fake.start_attempt(broken)

    assert outcomes == [("refused", False), ("refused", False), ("started", None)]
    assert lasting.value.lasting is True
    assert lasting.value.reason == "ValidationException: bad role"
    assert set(fake.jobs) == {flaky.attempts[0].training_job_name, broken.attempts[0].training_job_name}


def test_a_stop_leaves_the_job_stopping_until_sagemaker_reports_it_stopped() -> None:
    clock = FakeClock()
    fake = FakeTrainingService(clock=clock)
    current = started("a")
    name = current.attempts[0].training_job_name
    fake.start_attempt(current)

    fake.stop(name)
    stopping = fake.describe(name)
    assert fake.live_names() == [name]
    clock.advance(minutes=2)
    fake.set_status(name, "Stopped")

    assert stopping is not None and stopping.status == "Stopping"
    assert fake.describe(name) == fake.describe(name)
    final = fake.describe(name)
    assert final is not None and final.status == "Stopped" and final.end_time == EPOCH + timedelta(minutes=2)
    assert fake.stop_calls == [name]
    assert fake.live_names() == []


def test_stop_immediately_ends_the_job_at_once() -> None:
    fake = FakeTrainingService(stop_immediately=True)
    current = started("a")
    fake.start_attempt(current)

    fake.stop(current.attempts[0].training_job_name)

    status = fake.describe(current.attempts[0].training_job_name)
    assert status is not None and status.status == "Stopped"


def test_a_failure_carries_its_reason_into_describe_and_the_event() -> None:
    fake = FakeTrainingService()
    current = started("a")
    name = current.attempts[0].training_job_name
    fake.start_attempt(current)

    fake.set_status(name, "Failed", failure_reason="AlgorithmError: out of memory")
    event = fake.state_change_event(name)

    status = fake.describe(name)
    assert status is not None and status.failure_reason == "AlgorithmError: out of memory"
    assert event["source"] == "aws.sagemaker"
    assert event["detail-type"] == "SageMaker Training Job State Change"
    assert event["detail"]["TrainingJobStatus"] == "Failed"
    assert event["detail"]["FailureReason"] == "AlgorithmError: out of memory"
    assert event["detail"]["Tags"] == {"priority": "0", "smq:job": "a", "smq:attempt": "1"}


def test_outside_in_progress_lists_one_training_job_per_configured_pool_and_never_a_queue_attempt() -> None:
    fake = FakeTrainingService(external={G5: 3, P5: 0, "ml.c5.xlarge": 2})
    current = started("ours")
    fake.start_attempt(current)

    outside = fake.outside_in_progress([current.attempts[0].training_job_name])

    assert outside == {f"outside-{G5}": {G5: 3}, "outside-ml.c5.xlarge": {"ml.c5.xlarge": 2}}


def test_outside_in_progress_follows_what_the_test_sets() -> None:
    fake = FakeTrainingService()

    before = fake.outside_in_progress([])
    fake.external[P5] = 1
    after = fake.outside_in_progress([])

    assert before == {}
    assert after == {f"outside-{P5}": {P5: 1}}


# ------------------------------------------------------------------------ InMemoryJobStore's index lag


def _lagging_store(lag: int) -> InMemoryJobStore:
    """A store with a lagging index, past its first `lag` writes (which it serves as they are)."""
    store = InMemoryJobStore(index_lag=lag)
    for index in range(lag):
        store.create(job(f"seed-{index}", minute=index, pool=P5))
    return store


def test_a_lagging_index_serves_the_pending_front_counts_and_listings_as_they_were() -> None:
    store = _lagging_store(1)
    created = store.create(job("a", minute=10))
    store.create(job("b", minute=11))

    started_a = store.save(lifecycle.start(created, T0, reason="fits"), expected_version=1)

    assert names(store.pending_front(G5, 10)) == ["a", "b"]
    assert store.count_pending(G5) == 2
    assert names(store.list_jobs(states=[JobState.PENDING], pool=G5).jobs) == ["a", "b"]
    assert store.list_jobs(states=[JobState.STARTING]).jobs == []
    assert store.get("a") == started_a
    assert names(store.in_use().live) == ["a"]


def test_a_lagging_index_shows_the_items_as_they_were_lag_writes_ago() -> None:
    store = _lagging_store(2)
    created = store.create(job("a", minute=10))
    store.save(lifecycle.start(created, T0, reason="fits"), expected_version=1)

    seen = [names(store.pending_front(G5, 10))]
    for index, name in enumerate("bcd"):
        store.create(job(name, minute=11 + index))
        seen.append(names(store.pending_front(G5, 10)))

    # a created, a started | b created | c created | d created
    assert seen == [[], ["a"], [], ["b"]]
    assert store.count_pending(G5) == 1
    assert names(store.list_jobs(states=[JobState.STARTING]).jobs) == ["a"]
    assert names(store.list_jobs(states=[JobState.PENDING], pool=G5).jobs) == ["b"]


def test_a_lagging_index_never_delays_reads_by_key() -> None:
    store = _lagging_store(3)
    created = store.create(job("a", minute=10))
    starting = store.save(lifecycle.start(created, T0, reason="fits"), expected_version=created.version)
    running = store.save(lifecycle.mark_running(starting, T0), expected_version=starting.version)

    store.record_outside("by-hand", {G5: 2}, holding=True)

    assert store.get("a") == running
    assert store.in_use().live == [running]
    assert store.in_use().outside == {G5: 2}
    assert store.pending_front(G5, 10) == []
    assert store.list_jobs(states=list(JobState), pool=G5).jobs == []


def test_a_lagging_index_lags_from_the_first_write() -> None:
    store = InMemoryJobStore(index_lag=1)

    store.create(job("a"))

    assert store.pending_front(G5, 10) == []


def test_without_lag_every_index_read_is_current() -> None:
    store = InMemoryJobStore()
    created = store.create(job("a"))

    store.save(lifecycle.start(created, T0, reason="fits"), expected_version=1)

    assert store.pending_front(G5, 10) == []
    assert store.count_pending(G5) == 0
    assert names(store.list_jobs(states=[JobState.STARTING]).jobs) == ["a"]


def test_front_reads_count_the_pending_jobs_served() -> None:
    store = InMemoryJobStore()
    for minute in range(5):
        store.create(job(f"j{minute}", minute=minute))

    store.pending_front(G5, 3)
    store.pending_front(G5, 10)
    store.pending_front(P5, 10)

    assert store.front_reads == 8


def names(jobs: list[Job]) -> list[str]:
    return [each.name for each in jobs]


# ------------------------------------------------------------------------ clock, config, trigger


def test_the_clock_moves_only_when_told() -> None:
    clock = FakeClock()

    assert clock() == clock.now() == EPOCH
    assert clock.advance(seconds=30) == EPOCH + timedelta(seconds=30)
    assert clock.advance(timedelta(minutes=1)) == EPOCH + timedelta(seconds=90)
    clock.set(T0)
    assert clock() == T0


def test_config_source_serves_what_the_test_sets() -> None:
    source = FakeConfigSource({G5: 2}, unpooled=UnpooledPolicy.UNLIMITED)

    first = source.load()
    source.set_pools({G5: 4})
    second = source.load()

    assert first.pools == {G5: 2}
    assert second.pools == {G5: 4}
    assert second.unpooled is UnpooledPolicy.UNLIMITED
    assert source.loads == 2


def test_trigger_records_kicks_and_runs_the_callback() -> None:
    ran: list[str] = []
    trigger = RecordingTrigger(on_kick=ran.append)

    trigger.kick("job a added")
    trigger.kick("job a cancelled")

    assert trigger.kicks == ran == ["job a added", "job a cancelled"]
