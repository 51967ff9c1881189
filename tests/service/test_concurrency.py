"""Concurrent scheduler passes and event handlers against the real DynamoDB store (moto server).

Each thread has its own Scheduler, as separate Lambda containers would; they share only the table
(jobs and the pass lease) and SageMaker. The queue's guarantees must hold at every moment.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from smq.local.atomic_dynamodb import make_moto_dynamodb_atomic
from smq_lambda.adapters.dynamodb_lease import DynamoPassLease
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.states import LIVE_STATES, TERMINAL_STATES
from smq_lambda.handlers.scheduler import handle
from smq_lambda.service.scheduler import Scheduler

from tests.service.harness import queued_job
from tests.support.aws import create_queue_table, moto_server
from tests.support.fakes import FakeConfigSource, FakeTrainingService

CAPACITY = {"ml.p5.48xlarge": 3, "ml.g5.xlarge": 2}
THREADS = 4
ROUNDS = 12
BUSY = ("InProgress", "Stopping")


def _utcnow() -> datetime:
    return datetime.now(UTC)


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    make_moto_dynamodb_atomic()
    with moto_server() as url:
        yield boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1")


def test_concurrent_passes_and_events_never_over_commit_or_start_twice(dynamodb: object) -> None:
    table = create_queue_table(dynamodb, table_name="smq-concurrency")
    store = DynamoJobStore(table, dynamodb)
    sagemaker = FakeTrainingService(clock=_utcnow)
    config = FakeConfigSource(CAPACITY)
    rng = random.Random(7)
    for index in range(16):
        pool = rng.choice(sorted(CAPACITY))
        store.create(queued_job(f"job{index}", priority=rng.randint(0, 3), submitted_at=_utcnow(), pool=pool,
                                instances=rng.randint(1, CAPACITY[pool])))  # fmt: skip

    violations: list[str] = []
    stop = threading.Event()

    def scheduler() -> Scheduler:
        return Scheduler(store=store, training=sagemaker, config=config, lease=DynamoPassLease(table, dynamodb), clock=_utcnow)

    def passes() -> None:
        mine = scheduler()
        for _ in range(ROUNDS):
            handle({"source": "smq.api"}, mine)

    def sagemaker_progress(seed: int) -> None:
        mine, local = scheduler(), random.Random(seed)
        for _ in range(ROUNDS * 2):
            busy = [name for name, job in list(sagemaker.jobs.items()) if job.status in BUSY]
            if busy:
                name = local.choice(busy)
                status = "Stopped" if sagemaker.jobs[name].status == "Stopping" else local.choice(["InProgress", "Completed"])
                sagemaker.set_status(name, status)
                event = sagemaker.state_change_event(name)
                for _ in range(local.choice([1, 2])):
                    handle(event, mine)
            time.sleep(0.01)

    def monitor() -> None:
        while not stop.is_set():
            used: Counter[str] = Counter()
            per_job: Counter[str] = Counter()
            for job in list(sagemaker.jobs.values()):
                if job.status in BUSY:
                    resources = job.request["ResourceConfig"]
                    used[resources["InstanceType"]] += resources["InstanceCount"]
                    per_job[job.tags["smq:job"]] += 1
            violations.extend(f"{pool} uses {n} > {CAPACITY[pool]}" for pool, n in used.items() if n > CAPACITY[pool])
            violations.extend(f"{job} has {n} live attempts" for job, n in per_job.items() if n > 1)
            time.sleep(0.005)

    workers = [threading.Thread(target=passes) for _ in range(THREADS)]
    workers += [threading.Thread(target=sagemaker_progress, args=(seed,)) for seed in range(2)]
    watcher = threading.Thread(target=monitor)
    watcher.start()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    stop.set()
    watcher.join()

    assert not violations, violations[:5]
    jobs = [store.get(f"job{index}") for index in range(16)]
    recorded = {attempt.training_job_name for job in jobs if job for attempt in job.attempts}
    assert set(sagemaker.jobs) == recorded, "every SageMaker job is a recorded attempt, and no attempt twice"
    assert recorded, "the scenario must start jobs"
    live_usage: Counter[str] = Counter()
    for job in jobs:
        assert job is not None
        open_attempts = [attempt for attempt in job.attempts if attempt.is_open]
        assert len(open_attempts) == (1 if job.state in LIVE_STATES else 0), job
        if job.state in LIVE_STATES:
            live_usage.update(job.demand)
    assert all(live_usage[pool] <= CAPACITY[pool] for pool in live_usage)
    assert any(job is not None and job.state in TERMINAL_STATES for job in jobs)
