"""Concurrent scheduler passes and event handlers against the real DynamoDB store (moto server).

Each thread has its own Scheduler, as separate Lambda containers would; they share only the table
(jobs and the pass lease) and SageMaker. The queue's guarantees must hold at every moment.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws
from smq.local.atomic_dynamodb import make_moto_dynamodb_atomic
from smq_lambda.adapters.dynamodb_lease import DynamoPassLease
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.states import TERMINAL_STATES, JobState
from smq_lambda.handlers.scheduler import handle
from smq_lambda.service.scheduler import Scheduler, SchedulerPorts

from tests.scheduling.invariants import TrainingJobView, check_queue_against_sagemaker, sagemaker_violations
from tests.service.harness import queued_job
from tests.support.aws import REGION, create_queue_table, moto_server, use_test_credentials
from tests.support.fakes import FakeConfigSource, FakeTrainingService

CAPACITY = {"ml.p5.48xlarge": 3, "ml.g5.xlarge": 2}
JOBS = 16
PASS_THREADS = 4
PASS_ROUNDS = 12
PROGRESS_THREADS = 2
DEADLINE_SECONDS = 240
"""Generous: the scenario ends well within it even on a loaded machine; it only bounds a run whose
jobs can never finish."""
BUSY = ("InProgress", "Stopping")
RECONCILE = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


def _utcnow() -> datetime:
    return datetime.now(UTC)


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    make_moto_dynamodb_atomic()
    with moto_server() as url:
        yield boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1")


@pytest.mark.slow
def test_concurrent_passes_and_events_never_over_commit_or_start_twice(dynamodb: object) -> None:
    """Passes race each other and SageMaker's events until every job has ended.

    Liveness is event-driven: SageMaker moves its busy jobs on, and reconciliation runs whenever none
    is busy, until the table says every job ended (or a generous deadline passes, which fails). How
    fast threads happen to be scheduled changes the interleaving, never the outcome.
    """
    table = create_queue_table(dynamodb, table_name="smq-concurrency")
    store = DynamoJobStore(table, dynamodb)
    sagemaker = FakeTrainingService(clock=_utcnow)
    config = FakeConfigSource(CAPACITY)
    rng = random.Random(7)
    names = [f"job{index}" for index in range(JOBS)]
    for name in names:
        pool = rng.choice(sorted(CAPACITY))
        store.create(queued_job(name, priority=rng.randint(0, 3), submitted_at=_utcnow(), pool=pool,
                                instances=rng.randint(1, CAPACITY[pool])))  # fmt: skip

    violations: list[str] = []
    errors: list[BaseException] = []
    ended = threading.Event()
    deadline = time.monotonic() + DEADLINE_SECONDS

    def scheduler() -> Scheduler:
        return Scheduler(
            SchedulerPorts(
                store=store, training=sagemaker, config=config, lease=DynamoPassLease(table, dynamodb), clock=_utcnow
            )
        )

    def all_ended() -> bool:
        return all((job := store.get(name)) is not None and job.state in TERMINAL_STATES for name in names)

    def passes() -> None:
        mine = scheduler()
        for _ in range(PASS_ROUNDS):
            handle({"source": "smq.api"}, mine)

    def sagemaker_progress(seed: int) -> None:
        """Until every job ended: report a busy training job as it is or end it, delivering its event
        once or twice; with none busy, run a reconciliation, which also runs a pass.

        A training job is never moved back to a busy status: two threads (or a pass's stop) may act
        on one job at once, and SageMaker never revives a job that ended.
        """
        mine, local = scheduler(), random.Random(seed)
        while not ended.is_set() and time.monotonic() < deadline:
            busy = sorted(name for name, job in list(sagemaker.jobs.items()) if job.status in BUSY)
            if not busy:
                if all_ended():
                    ended.set()
                else:
                    handle(RECONCILE, mine)
                continue
            name = local.choice(busy)
            if sagemaker.jobs[name].status == "Stopping":
                sagemaker.set_status(name, "Stopped")
            elif local.random() < 0.5:
                sagemaker.set_status(name, "Completed")
            event = sagemaker.state_change_event(name)
            for _ in range(local.choice([1, 2])):
                handle(event, mine)

    def monitor() -> None:
        """Samples SageMaker's busy jobs in one atomic read (reading job by job could count a job that
        ended and the one that replaced it together)."""
        while not ended.is_set() and time.monotonic() < deadline:
            busy = [
                TrainingJobView.of(name, "InProgress", sagemaker.jobs[name].request) for name in sagemaker.live_names()
            ]
            violations.extend(sagemaker_violations(busy, CAPACITY))
            time.sleep(0.005)

    def recording(target: Callable[..., None], *args: object) -> threading.Thread:
        def run() -> None:
            try:
                target(*args)
            except BaseException as exc:
                errors.append(exc)
                ended.set()

        return threading.Thread(target=run)

    workers = [recording(passes) for _ in range(PASS_THREADS)]
    workers += [recording(sagemaker_progress, seed) for seed in range(PROGRESS_THREADS)]
    workers.append(recording(monitor))
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=max(0.0, deadline - time.monotonic()) + 10)

    assert not errors, errors
    assert not any(worker.is_alive() for worker in workers), "a thread is still running after the deadline"
    assert not violations, violations[:5]
    jobs = [store.get(name) for name in names]
    assert all(job is not None and job.state in TERMINAL_STATES for job in jobs), (
        f"jobs not ended after {DEADLINE_SECONDS} s: {[(job.name, str(job.state)) for job in jobs if job]}"
    )
    views = [TrainingJobView.of(job.name, job.status, job.request) for job in list(sagemaker.jobs.values())]
    check_queue_against_sagemaker([job for job in jobs if job], views, CAPACITY, submitted=names, settled=True)
    assert any(job is not None and job.state is JobState.COMPLETED for job in jobs)


def test_a_job_that_starts_running_while_a_pass_reads_the_table_is_still_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race the concurrent test above meets now and then, made to happen every time: the
    InProgress event of a starting job lands while the pass reads what is in use (after the pools'
    usage items, before the jobs they name). Live jobs are read by key, so it is counted."""
    use_test_credentials(monkeypatch)
    with mock_aws():
        reader = boto3.client("dynamodb", region_name=REGION)
        table = create_queue_table(reader, table_name="smq-read-race")
        store = DynamoJobStore(table, reader)
        events = DynamoJobStore(table, boto3.client("dynamodb", region_name=REGION))
        queued = store.create(queued_job("racer", priority=0, submitted_at=_utcnow()))
        starting = store.save(
            lifecycle.start(queued, _utcnow(), reason="capacity free"), expected_version=queued.version
        )
        landed: list[bool] = []

        def event_lands_after_the_usage_items_are_read(**_: object) -> None:
            if not landed:
                events.save(lifecycle.mark_running(starting, _utcnow()), expected_version=starting.version)
                landed.append(True)

        reader.meta.events.register("after-call.dynamodb.BatchGetItem", event_lands_after_the_usage_items_are_read)

        held = store.in_use()

    assert landed
    assert [(job.name, job.state) for job in held.live] == [("racer", JobState.RUNNING)]
