"""`save` on moto against the template's table: the request sent only when it changed, the item
exactly the job's, failed conditions changing no live set."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import to_item
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import JobConflict, VersionConflict

from tests.adapters.builders import ALICE, G5, P5, T0, job, request
from tests.adapters.dynamodb_store.support import TTL_DAYS, Requests, live_set, raw, running, started

BIG_HYPERPARAMETERS = {f"param_{index:04d}": "x" * 200 for index in range(400)}
"""About 90 KB of request: what a save must not send again."""


def test_saves_send_the_request_only_when_it_changed(
    store: DynamoJobStore, dynamodb_client: Any, table: str, requests_to: Requests
) -> None:
    body = {**request("big"), "HyperParameters": BIG_HYPERPARAMETERS}
    created = store.create(replace(job("big"), request=body))
    request_text = json.dumps(body, separators=(",", ":"))
    creates = len(requests_to.sent)

    current = created
    for step in (
        lambda c: lifecycle.explain(c, T0, "waits"),
        started,
        running,
        lambda c: lifecycle.request_stop(c, T0, preempt=True, reason="p"),
        lambda c: lifecycle.requeue(c, T0, outcome="preempted", reason="p"),
        lambda c: lifecycle.cancel_pending(c, T0, by=ALICE),
    ):
        current = store.save(step(current), expected_version=current.version)

    saves = requests_to.sent[creates:]
    assert {operation for operation, _ in saves} == {"UpdateItem", "TransactWriteItems"}
    for _, params in saves:
        text = json.dumps(params)
        assert '"request"' not in text
        assert len(text) < 10_000 < len(request_text)
    loaded = store.get("big")
    assert loaded == current and loaded is not None and loaded.request == body
    stored = raw(dynamodb_client, table, "big")
    assert stored == to_item(current, ttl_days=TTL_DAYS)


def test_a_saved_item_is_exactly_the_jobs_item(store: DynamoJobStore, dynamodb_client: Any, table: str) -> None:
    """Every attribute a save leaves is the job's: optional ones it no longer has are removed."""
    store.create(job("a"))
    current = store.get("a")
    assert current is not None
    items = []
    for step in (
        lambda c: lifecycle.reprioritize(c, T0, 4, by=ALICE),
        started,
        lambda c: lifecycle.refuse_start(c, T0, reason="CapacityError", lasting=False),
        started,
        running,
        lambda c: lifecycle.stop_for_governance(c, T0, outcome=AttemptOutcome.IDLE_GPU, reason="idle GPU"),
        lambda c: lifecycle.end_stopped(c, T0),
    ):
        current = store.save(step(current), expected_version=current.version)
        items.append(raw(dynamodb_client, table, "a") == to_item(current, ttl_days=TTL_DAYS))

    assert items == [True] * len(items)


def test_a_lost_condition_is_raised_from_the_client_error(store: DynamoJobStore) -> None:
    created = store.create(job("a"))
    live = store.create(job("b"))

    with pytest.raises(VersionConflict) as lost:
        store.save(lifecycle.explain(replace(created, version=7), T0, "x"), expected_version=7)
    with pytest.raises(VersionConflict) as lost_in_transaction:
        store.save(started(replace(live, version=7)), expected_version=7)
    with pytest.raises(JobConflict) as duplicate:
        store.create(job("a", minute=1))

    assert isinstance(lost.value.__cause__, ClientError)
    assert isinstance(lost_in_transaction.value.__cause__, ClientError)
    assert lost_in_transaction.value.__cause__.response["Error"]["Code"] == "TransactionCanceledException"
    assert isinstance(duplicate.value.__cause__, ClientError)
    assert duplicate.value.message == "a job named 'a' is already pending"


@pytest.mark.parametrize(
    ("stored_steps", "stale_step"),
    [
        pytest.param(
            (started, running, lambda c: lifecycle.request_stop(c, T0, preempt=True, reason="p")),
            lambda c: lifecycle.refuse_start(c, T0, reason="r", lasting=False),
            id="live-stays-live",
        ),
        pytest.param(
            (started, running, lambda c: lifecycle.requeue(c, T0, outcome="preempted", reason="p")),
            lambda c: lifecycle.request_stop(c, T0, preempt=True, reason="p"),
            id="requeued-stays-out",
        ),
    ],
)
def test_a_save_whose_condition_fails_changes_no_live_set(
    store: DynamoJobStore,
    dynamodb_client: Any,
    table: str,
    stored_steps: tuple[Callable[[Job], Job], ...],
    stale_step: Callable[[Job], Job],
) -> None:
    """The job's update and its pools' `live` changes are one transaction: a stale writer changes
    neither (it would otherwise take a live job out of the count, or put a pending one in)."""
    store.create(job("hetero", groups=[(G5, 1), (P5, 2)]))
    current = store.get("hetero")
    assert current is not None
    views = [current]
    for step in stored_steps:
        current = store.save(step(current), expected_version=current.version)
        views.append(current)
    stale = views[-2]
    before = {pool: live_set(dynamodb_client, table, pool) for pool in (G5, P5)}
    item_before = raw(dynamodb_client, table, "hetero")

    with pytest.raises(VersionConflict):
        store.save(stale_step(stale), expected_version=stale.version)

    assert {pool: live_set(dynamodb_client, table, pool) for pool in (G5, P5)} == before
    assert before == ({G5: {"hetero"}, P5: {"hetero"}} if current.is_live else {G5: set(), P5: set()})
    assert raw(dynamodb_client, table, "hetero") == item_before
    assert store.in_use().live == ([current] if current.is_live else [])


def test_a_transaction_that_lost_the_race_to_an_earlier_job_of_the_name_changes_no_live_set(
    store: DynamoJobStore, dynamodb_client: Any, table: str
) -> None:
    """A writer still holding a finished job of a reused name: the job id condition fails the whole
    transaction, so the new job (pending) is not counted as live."""
    old = store.create(job("reused"))
    old_starting = store.save(started(old), expected_version=old.version)
    old_running = store.save(running(old_starting), expected_version=old_starting.version)
    done = lifecycle.finish(old_running, JobState.COMPLETED, T0, outcome="completed", reason=None)
    store.save(done, expected_version=old_running.version)
    store.create(job("reused", minute=5, job_id="new"))

    with pytest.raises(VersionConflict):
        store.save(
            lifecycle.request_stop(old_running, T0, preempt=True, reason="p"), expected_version=old_running.version
        )

    assert live_set(dynamodb_client, table, G5) == set()
    assert store.in_use().live == []


def test_a_save_of_a_job_this_store_did_not_read_sends_its_request(
    store: DynamoJobStore, requests_to: Requests
) -> None:
    """Not knowing what is stored, it writes the request too: correct, only bigger."""
    created = DynamoJobStore(store._table, store._client).create(job("elsewhere"))
    requests_to.sent.clear()

    store.save(lifecycle.explain(created, T0, "waits"), expected_version=created.version)

    assert '"request"' in json.dumps(requests_to.of("UpdateItem"))


def test_a_summary_of_the_pending_index_is_never_saved(store: DynamoJobStore) -> None:
    created = store.create(job("summary"))
    (summary,) = store.pending_front(G5, 1)

    with pytest.raises(ValueError, match="summary"):
        store.save(lifecycle.explain(summary, T0, "waits"), expected_version=created.version)
