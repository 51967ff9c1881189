"""The stores every JobStore contract test runs against (the in-memory fake and the DynamoDB store
on moto, reading two items per Query page so that every listing crosses page boundaries), and the
lifecycle steps they save as the services do."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.ports import JobStore

from tests.adapters.builders import ALICE, T0
from tests.support.aws import create_queue_table
from tests.support.fakes import InMemoryJobStore

TTL_DAYS = 7
NOW = T0 + timedelta(hours=1)


STORES = ["memory", "dynamodb"]


@dataclass
class Subject:
    store: JobStore
    item: Callable[[str], dict[str, Any] | None]
    """The raw stored item, as DynamoDB would hold it."""


def make_subject(kind: str, request: pytest.FixtureRequest) -> Subject:
    if kind == "memory":
        memory = InMemoryJobStore(ttl_days=TTL_DAYS)
        return Subject(memory, memory.item)
    client = request.getfixturevalue("dynamodb_client")
    table = create_queue_table(client, f"smq-queue-{uuid.uuid4().hex[:8]}")

    def item(name: str) -> dict[str, Any] | None:
        return client.get_item(TableName=table, Key={"name": {"S": name}}, ConsistentRead=True).get("Item")

    return Subject(DynamoJobStore(table, client, ttl_days=TTL_DAYS, page_size=2), item)


Step = Callable[[Job], Job]


def start(current: Job) -> Job:
    return lifecycle.start(current, NOW, reason="fits")


def running(current: Job) -> Job:
    return lifecycle.mark_running(current, NOW)


def preempt(current: Job) -> Job:
    return lifecycle.request_stop(current, NOW, preempt=True, reason="preempted for a higher priority")


def stop(current: Job) -> Job:
    return lifecycle.request_stop(current, NOW, preempt=False, reason="cancelled")


def requeue(current: Job) -> Job:
    return lifecycle.requeue(current, NOW, outcome="preempted", reason="preempted")


def complete(current: Job) -> Job:
    return lifecycle.finish(current, JobState.COMPLETED, NOW + timedelta(minutes=5), outcome="completed", reason=None)


def refuse(current: Job) -> Job:
    return lifecycle.refuse_start(current, NOW, reason="ValidationException: bad role", lasting=True)


def cancel(current: Job) -> Job:
    return lifecycle.cancel_pending(current, NOW, by=ALICE)


PATH_TO: dict[JobState, list[Step]] = {
    JobState.PENDING: [],
    JobState.STARTING: [start],
    JobState.RUNNING: [start, running],
    JobState.PREEMPTING: [start, running, preempt],
    JobState.STOPPING: [start, running, stop],
    JobState.COMPLETED: [start, running, complete],
    JobState.FAILED: [start, refuse],
    JobState.CANCELLED: [cancel],
}


def move(store: JobStore, name: str, *steps: Step) -> Job:
    """Apply each step to the stored job and save it conditionally, as the services do."""
    current = store.get(name)
    assert current is not None
    for step in steps:
        current = store.save(step(current), expected_version=current.version)
    return current


def put(store: JobStore, new: Job, state: JobState = JobState.PENDING) -> Job:
    store.create(new)
    return move(store, new.name, *PATH_TO[state])


def names(jobs: list[Job]) -> list[str]:
    return [each.name for each in jobs]


ALL = list(JobState)
