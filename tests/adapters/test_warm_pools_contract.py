"""The warm pool store: one contract, run against the in-memory fake and the DynamoDB adapter (moto).
Duplicated and reordered reports change nothing wrongly; each ended warm pool counts once."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from smq_lambda.adapters.dynamodb_warm_pools import DynamoWarmPools
from smq_lambda.domain.warm.warm_pools import WarmPool, WarmPoolTotals
from smq_lambda.ports import WarmPoolStore

from tests.support.fake_warm_pools import InMemoryWarmPools

NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)
P5 = "ml.p5.48xlarge"


def warm(name: str = "job-abc-1", minutes: int = 30) -> WarmPool:
    return WarmPool(name, P5, P5, 2, "k" * 64, NOW + timedelta(minutes=minutes))


@pytest.fixture(params=["memory", "dynamodb"])
def store(request: pytest.FixtureRequest) -> WarmPoolStore:
    if request.param == "memory":
        return InMemoryWarmPools()
    client: Any = request.getfixturevalue("dynamodb_client")
    return DynamoWarmPools(request.getfixturevalue("table"), client, clock=lambda: NOW)


def test_a_recorded_warm_pool_is_available_until_it_runs_out(store: WarmPoolStore) -> None:
    assert store.record(warm()) is True
    assert store.record(warm()) is False
    assert store.available(NOW) == [warm()]
    assert store.available(NOW + timedelta(minutes=31)) == []


def test_an_ended_warm_pool_is_gone_and_counts_once(store: WarmPoolStore) -> None:
    store.record(warm("a"))
    store.record(warm("b"))
    assert store.end("a", reused=True, retained_instance_s=120) is True
    assert store.end("a", reused=True, retained_instance_s=120) is False
    assert store.end("b", reused=False, retained_instance_s=600) is True
    assert store.available(NOW) == []
    assert store.totals() == WarmPoolTotals(retained=2, reused=1, retained_instance_s=720)
    assert store.totals().reuse_rate == 0.5


def test_a_late_available_report_never_brings_an_ended_warm_pool_back(store: WarmPoolStore) -> None:
    assert store.end("a", reused=False, retained_instance_s=0) is True
    assert store.record(warm("a")) is False
    assert store.available(NOW) == []


def test_a_released_warm_pool_is_held_until_it_ends(store: WarmPoolStore) -> None:
    store.record(warm())
    assert store.release("job-abc-1") is True
    assert store.release("job-abc-1") is False
    assert [pool.released for pool in store.available(NOW)] == [True]
    assert store.release("unknown") is False


def test_every_live_warm_pool_is_counted_however_many_there_are(store: WarmPoolStore) -> None:
    """Past the 100 keys of one batch read too: a warm pool left uncounted holds instances the
    passes would hand out again (150 one-instance warm pools in a pool of 200 leave room for 50)."""
    names = [f"job-{number:03d}-1" for number in range(150)]
    for name in names:
        assert store.record(replace(warm(name), count=1))

    held = store.available(NOW)

    assert sorted(pool.training_job_name for pool in held) == names
    assert sum(pool.count for pool in held) == 150
