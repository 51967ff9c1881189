"""Hypothesis over moto: after any lifecycle of three jobs, `in_use().live` is exactly the stored
live jobs and each pool's live set names exactly those holding it."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from smq_lambda.adapters.dynamodb_pool_holders import pool_key
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import from_item, job_order_key
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import LIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import VersionConflict

from tests.adapters.builders import ALICE, G5, P5, T0, job
from tests.adapters.dynamodb_store.support import TTL_DAYS, running, started
from tests.support.aws import create_queue_table

NAMES = ("g5-job", "p5-job", "hetero")


def _submission(name: str, minute: int, job_id: str) -> Job:
    shapes: dict[str, dict[str, Any]] = {
        "g5-job": {"pool": G5},
        "p5-job": {"pool": P5, "instances": 2},
        "hetero": {"groups": [(P5, 1), (G5, 2)]},
    }
    return job(name, minute=minute, job_id=job_id, **shapes[name])


def stop(current: Job) -> Job:
    return lifecycle.request_stop(current, T0, preempt=False, reason="cancelled")


def preempt(current: Job) -> Job:
    return lifecycle.request_stop(current, T0, preempt=True, reason="preempted")


def complete(current: Job) -> Job:
    return lifecycle.finish(current, JobState.COMPLETED, T0, outcome="completed", reason=None)


def fail(current: Job) -> Job:
    return lifecycle.finish(current, JobState.FAILED, T0, outcome="failed", reason="boom")


def _moves(state: JobState) -> list[Callable[[Job], Job]]:
    """Every change the services make to a job in `state` (terminal: none; it is submitted again)."""
    moves: dict[JobState, list[Callable[[Job], Job]]] = {
        JobState.PENDING: [
            started,
            lambda c: lifecycle.cancel_pending(c, T0, by=ALICE),
            lambda c: lifecycle.explain(c, T0, "waits"),
            lambda c: lifecycle.reprioritize(c, T0, c.priority + 1, by=ALICE),
        ],
        JobState.STARTING: [
            running,
            lambda c: lifecycle.refuse_start(c, T0, reason="CapacityError", lasting=False),
            lambda c: lifecycle.refuse_start(c, T0, reason="ValidationException", lasting=True),
            preempt,
            stop,
            fail,
        ],
        JobState.RUNNING: [
            preempt,
            stop,
            complete,
            fail,
            lambda c: lifecycle.retry_failed(c, T0, reason="InternalServerError"),
            lambda c: lifecycle.stop_for_governance(c, T0, outcome=AttemptOutcome.IDLE_GPU, reason="idle GPU"),
        ],
        JobState.PREEMPTING: [
            lambda c: lifecycle.requeue(c, T0, outcome="preempted", reason="preempted"),
            stop,
            complete,
        ],
        JobState.STOPPING: [lambda c: lifecycle.end_stopped(c, T0), complete],
    }
    return moves.get(state, [])


STEPS = st.lists(
    st.tuples(st.sampled_from(NAMES), st.integers(0, 5), st.booleans()),
    min_size=1,
    max_size=10,
)


def _stored(client: Any, table: str) -> tuple[list[Job], dict[str, set[str]]]:
    """The live jobs in scheduling order and each pool's live set, read together in one strongly
    consistent BatchGetItem; asserts that each pool's set names exactly the live jobs holding it."""
    keys = [*NAMES, pool_key(G5), pool_key(P5)]
    items = client.batch_get_item(
        RequestItems={table: {"Keys": [{"name": {"S": key}} for key in keys], "ConsistentRead": True}}
    )["Responses"][table]
    by_key = {item["name"]["S"]: item for item in items}
    live = sorted(
        (from_item(by_key[name]) for name in NAMES if by_key[name]["state"]["S"] in LIVE_STATES), key=job_order_key
    )
    sets = {pool: set(by_key.get(pool_key(pool), {}).get("live", {}).get("SS", [])) for pool in (G5, P5)}
    assert sets == {pool: {each.name for each in live if pool in each.demand} for pool in (G5, P5)}
    return live, sets


@settings(
    max_examples=max(settings.default.max_examples // 12, 5),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_in_use_is_exactly_the_stored_live_jobs_after_any_lifecycle(
    dynamodb_client: Any, steps: list[tuple[str, int, bool]]
) -> None:
    """Whatever the services do to three jobs (one in both pools), in whatever order, with stale
    writers losing races on the way and finished names submitted again, `in_use().live` is exactly
    the jobs whose stored state is live, and each pool's live set names exactly those holding it."""
    table = create_queue_table(dynamodb_client, f"smq-prop-{uuid.uuid4().hex[:8]}")
    store = DynamoJobStore(table, dynamodb_client, ttl_days=TTL_DAYS)
    for minute, name in enumerate(NAMES):
        store.create(_submission(name, minute, f"{name}-0"))
    submissions = dict.fromkeys(NAMES, 0)
    try:
        for name, choice, stale_first in steps:
            current = store.get(name)
            assert current is not None
            if current.state in TERMINAL_STATES:
                submissions[name] += 1
                store.create(_submission(name, 10 + submissions[name], f"{name}-{submissions[name]}"))
                _stored(dynamodb_client, table)
                continue
            moves = _moves(current.state)
            updated = moves[choice % len(moves)](current)
            if stale_first:
                before = _stored(dynamodb_client, table)
                with pytest.raises(VersionConflict):
                    store.save(replace(updated, version=current.version), expected_version=current.version - 1)
                assert _stored(dynamodb_client, table) == before
            store.save(updated, expected_version=current.version)
            _stored(dynamodb_client, table)
        assert store.in_use().live == _stored(dynamodb_client, table)[0]
    finally:
        dynamodb_client.delete_table(TableName=table)


@pytest.mark.parametrize(
    "back",
    [
        (preempt, lambda c: lifecycle.requeue(c, T0, outcome="preempted", reason="p")),
        (lambda c: lifecycle.refuse_start(c, T0, reason="CapacityError", lasting=False),),
    ],
    ids=["requeued", "refused-for-a-while"],
)
def test_a_flexible_job_back_in_the_queue_leaves_the_live_set_of_the_pool_its_attempt_held(
    dynamodb_client: Any, back: tuple[Callable[[Job], Job], ...]
) -> None:
    """Pending again, it is listed under its first preference: its attempt held its second."""
    from tests.adapters.job_store_contract.test_pending_listings import flexible

    table = create_queue_table(dynamodb_client, f"smq-flex-{uuid.uuid4().hex[:8]}")
    store = DynamoJobStore(table, dynamodb_client, ttl_days=TTL_DAYS)
    current = store.create(flexible("flex", P5, G5))
    current = store.save(
        lifecycle.start(current, T0, reason="fits", placement=current.placements[1]), expected_version=1
    )
    current = store.save(running(current), expected_version=current.version)
    assert store.in_use().live == [current]

    for step in back:
        current = store.save(step(current), expected_version=current.version)

    assert current.state is JobState.PENDING
    assert store.in_use().live == []
    assert _live_sets(dynamodb_client, table) == {P5: set(), G5: set()}


def _live_sets(client: Any, table: str) -> dict[str, set[str]]:
    items = {
        pool: client.get_item(TableName=table, Key={"name": {"S": pool_key(pool)}}).get("Item", {}) for pool in (P5, G5)
    }
    return {pool: set(item.get("live", {}).get("SS", [])) for pool, item in items.items()}
