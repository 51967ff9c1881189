"""End to end on the local stack: a job that keeps its instance warm completes, the matching job
waiting behind it starts on the warm pool (the local SageMaker reuses it, no provisioning), and the
pool never shows a free instance in between."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, synthetic_request, wait_for


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        capacity={POOL: 1}, executor="synthetic", workdir=tmp_path_factory.mktemp("stack"), reconcile_every_seconds=2
    )
    with LocalStack(options) as running:
        yield running


def keeping_warm(name: str, duration: float, priority: int = 0) -> dict[str, Any]:
    request = synthetic_request(name, priority=priority, duration=duration)
    request["ResourceConfig"]["KeepAlivePeriodInSeconds"] = 120
    return request


def test_a_matching_job_reuses_the_warm_pool_and_no_instance_is_free_in_between(stack: LocalStack) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")
    client.add_job(keeping_warm("first", duration=1))
    wait_for(client, "first", {"running", "completed"})
    free_seen: list[dict[str, Any]] = []
    watching = threading.Event()

    def watch() -> None:
        while not watching.is_set():
            pool = next(pool for pool in client.list_pools() if pool["pool"] == POOL)
            if pool["in_use"] < pool["capacity"]:
                free_seen.append(pool)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        wait_for(client, "first", {"completed"})
        warm = wait_for_pool(client, lambda pool: pool["warm"] == 1)
        client.add_job(keeping_warm("second", duration=1))
        second = wait_for(client, "second", {"running", "completed"})
    finally:
        watching.set()
        watcher.join()

    assert (warm["in_use"], warm["capacity"]) == (1, 1), "the warm instance is held, not free"
    assert free_seen == []
    sagemaker = stack.boto3_client("sagemaker")
    described = sagemaker.describe_training_job(TrainingJobName=second["training_job_name"])
    assert described["WarmPoolStatus"]["Status"] in ("InUse", "Available")
    first = sagemaker.describe_training_job(
        TrainingJobName=client.get_job("first")["attempts"][-1]["training_job_name"]
    )
    assert first["WarmPoolStatus"]["Status"] == "Reused"


def wait_for_pool(
    client: SmqApiClient, condition: Callable[[dict[str, Any]], bool], timeout: float = 20
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        pool = next(pool for pool in client.list_pools() if pool["pool"] == POOL)
        if condition(pool) or time.monotonic() > deadline:
            return pool
        time.sleep(0.2)


def test_a_job_ahead_that_does_not_match_ends_the_warm_pool_and_starts_once_it_is_gone(stack: LocalStack) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")
    sagemaker = stack.boto3_client("sagemaker")
    client.add_job(keeping_warm("kept", duration=2, priority=9))
    wait_for(client, "kept", {"running"})
    client.add_job(keeping_warm("matching", duration=1))
    urgent = synthetic_request("urgent", priority=5, duration=1)
    urgent["ResourceConfig"]["VolumeSizeInGB"] = 50
    client.add_job(urgent)

    wait_for(client, "urgent", {"running", "completed"}, timeout=30)
    wait_for(client, "matching", {"running", "completed"}, timeout=30)

    kept = sagemaker.describe_training_job(TrainingJobName=client.get_job("kept")["attempts"][-1]["training_job_name"])
    started = sagemaker.describe_training_job(
        TrainingJobName=client.get_job("urgent")["attempts"][-1]["training_job_name"]
    )
    assert kept["WarmPoolStatus"]["Status"] == "Terminated"
    warm_until = kept["TrainingEndTime"].timestamp() + kept["WarmPoolStatus"]["ResourceRetainedBillableTimeInSeconds"]
    assert started["CreationTime"].timestamp() >= warm_until, "urgent started only once the warm pool was gone"
    assert (
        started["CreationTime"]
        < sagemaker.describe_training_job(
            TrainingJobName=client.get_job("matching")["attempts"][-1]["training_job_name"]
        )["CreationTime"]
    )
