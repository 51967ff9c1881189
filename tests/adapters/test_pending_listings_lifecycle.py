"""Hypothesis, over the in-memory store and the DynamoDB store on moto: whatever the services do
to a heterogeneous and a flexible job, with stale writers losing on the way and finished names
submitted again, each has a listing item in each of its other pools exactly while it is pending,
at its version, and is in each of its pools' fronts exactly then (adapters/pending_listing.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.pending_listing import listing_key
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import TERMINAL_STATES, JobState
from smq_lambda.errors import VersionConflict
from smq_lambda.ports import JobStore

from tests.adapters.builders import ALICE, G5, P5, T0, job
from tests.adapters.job_store_contract.test_pending_listings import flexible
from tests.support.aws import create_queue_table
from tests.support.fakes import InMemoryJobStore

TRN = "ml.trn1.32xlarge"
Move = Callable[[Job, int], Job]


def _submission(shape: str, name: str, minute: int) -> Job:
    if shape == "hetero":
        return job(name, minute=minute, groups=[(P5, 1), (G5, 2), (TRN, 1)])
    return flexible(name, G5, TRN, P5, minute=minute)


def _start(current: Job, choice: int) -> Job:
    placement = current.placements[choice % len(current.placements)] if current.placements else None
    return lifecycle.start(current, T0, reason="fits", placement=placement)


MOVES: dict[JobState, list[Move]] = {
    JobState.PENDING: [
        _start,
        lambda c, _: lifecycle.cancel_pending(c, T0, by=ALICE),
        lambda c, _: lifecycle.explain(c, T0, "waits"),
        lambda c, _: lifecycle.reprioritize(c, T0, c.priority + 1, by=ALICE),
    ],
    JobState.STARTING: [
        lambda c, _: lifecycle.mark_running(c, T0),
        lambda c, _: lifecycle.refuse_start(c, T0, reason="CapacityError", lasting=False),
        lambda c, _: lifecycle.refuse_start(c, T0, reason="ValidationException", lasting=True),
    ],
    JobState.RUNNING: [
        lambda c, _: lifecycle.request_stop(c, T0, preempt=True, reason="preempted"),
        lambda c, _: lifecycle.request_stop(c, T0, preempt=False, reason="cancelled"),
        lambda c, _: lifecycle.finish(c, JobState.COMPLETED, T0, outcome="completed", reason=None),
    ],
    JobState.PREEMPTING: [lambda c, _: lifecycle.requeue(c, T0, outcome="preempted", reason="preempted")],
    JobState.STOPPING: [lambda c, _: lifecycle.end_stopped(c, T0)],
}
STEPS = st.lists(
    st.tuples(st.sampled_from(["hetero", "flexible"]), st.integers(0, 11), st.booleans()), min_size=1, max_size=12
)


def _check(store: JobStore, item: Callable[[str], dict[str, Any] | None], name: str) -> None:
    stored = store.get(name)
    assert stored is not None
    pending = stored.state is JobState.PENDING
    pools = stored.where.pools
    assert len(pools) == 3
    for pool in pools[1:]:
        listed = item(listing_key(pool, name))
        assert (listed is not None) == pending, (pool, stored.state)
        assert listed is None or int(listed["version"]["N"]) == stored.version
    for pool in pools:
        front = [each for each in store.pending_front(pool, 50) if each.name == name]
        assert front == ([replace(stored, history=(), earlier_outcomes={}, earlier_job_ids=())] if pending else [])


def _run(store: JobStore, item: Callable[[str], dict[str, Any] | None], steps: list[tuple[str, int, bool]]) -> None:
    suffix = uuid.uuid4().hex[:8]
    names = {shape: f"{shape}-{suffix}" for shape in ("hetero", "flexible")}
    for minute, (shape, name) in enumerate(names.items()):
        store.create(_submission(shape, name, minute))
    for shape, choice, stale_first in steps:
        name = names[shape]
        current = store.get(name)
        assert current is not None
        if current.state in TERMINAL_STATES:
            store.create(replace(_submission(shape, name, 10 + choice), job_id=uuid.uuid4().hex[:16]))
            _check(store, item, name)
            continue
        moves = MOVES[current.state]
        updated = moves[choice % len(moves)](current, choice)
        if stale_first:
            with pytest.raises(VersionConflict):
                store.save(replace(updated, version=current.version), expected_version=current.version - 1)
        store.save(updated, expected_version=current.version)
        _check(store, item, name)


@settings(deadline=None)
@given(steps=STEPS)
def test_listing_items_exist_exactly_while_pending_in_memory(steps: list[tuple[str, int, bool]]) -> None:
    store = InMemoryJobStore(ttl_days=7)
    _run(store, store.item, steps)


@settings(
    max_examples=max(settings.default.max_examples // 30, 3),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_listing_items_exist_exactly_while_pending_on_moto(
    dynamodb_client: Any, steps: list[tuple[str, int, bool]]
) -> None:
    """Fewer examples: moto copies every table on each transaction."""
    table = create_queue_table(dynamodb_client, f"smq-listing-{uuid.uuid4().hex[:8]}")
    store = DynamoJobStore(table, dynamodb_client, ttl_days=7)

    def item(key: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = dynamodb_client.get_item(
            TableName=table, Key={"name": {"S": key}}, ConsistentRead=True
        ).get("Item")
        return found

    try:
        _run(store, item, steps)
    finally:
        dynamodb_client.delete_table(TableName=table)
