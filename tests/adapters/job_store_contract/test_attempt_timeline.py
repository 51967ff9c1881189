"""The JobStore contract: `jobs_with_attempts_since`, what GET /attempts reads (live jobs and jobs
whose latest attempt ended since a time, across UTC days), on the fake and on DynamoDB."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.domain.states import JobState
from smq_lambda.service.timeline import attempts_overlapping

from tests.adapters.builders import T0, job
from tests.adapters.job_store_contract.subjects import STORES, Subject, make_subject, move

NOW = T0 + timedelta(hours=1)


def started(at: datetime) -> list:
    return [
        lambda current: lifecycle.start(current, at, reason="fits"),
        lambda current: lifecycle.mark_running(current, at),
    ]


def completed(at: datetime) -> list:
    return [lambda current: lifecycle.finish(current, JobState.COMPLETED, at, outcome="completed", reason=None)]


def preempted(at: datetime) -> list:
    return [
        lambda current: lifecycle.request_stop(current, at, preempt=True, reason="preempted"),
        lambda current: lifecycle.requeue(current, at, outcome="preempted", reason="preempted"),
    ]


@pytest.fixture(scope="module", params=STORES)
def history(request: pytest.FixtureRequest) -> Subject:
    """`done` ran 0-30 min; `bumped` ran 10-20 min and waits again; `live` runs since 40 min;
    `waiting` never ran; `old` ran three days ago; `twice` ran 5-15 min, then since 50 min."""
    subject = make_subject(request.param, request)
    steps = {
        "done": [*started(T0), *completed(T0 + timedelta(minutes=30))],
        "bumped": [*started(T0 + timedelta(minutes=10)), *preempted(T0 + timedelta(minutes=20))],
        "live": started(T0 + timedelta(minutes=40)),
        "waiting": [],
        "old": [*started(T0 - timedelta(days=3)), *completed(T0 - timedelta(days=3, minutes=-60))],
        "twice": [
            *started(T0 + timedelta(minutes=5)),
            *preempted(T0 + timedelta(minutes=15)),
            *started(T0 + timedelta(minutes=50)),
        ],
    }
    for minute, (name, path) in enumerate(steps.items()):
        subject.store.create(job(name, minute=minute - 60 * 24 * 4))
        move(subject.store, name, *path)
    return subject


def names(jobs: list[Job]) -> list[str]:
    return sorted(each.name for each in jobs)


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        (T0 + timedelta(minutes=25), ["done", "live", "twice"]),
        (T0 + timedelta(minutes=18), ["bumped", "done", "live", "twice"]),
        (T0 - timedelta(days=4), ["bumped", "done", "live", "old", "twice"]),
        (NOW, ["live", "twice"]),
    ],
)
def test_reads_live_jobs_and_jobs_that_ended_an_attempt_since(
    history: Subject, since: datetime, expected: list[str]
) -> None:
    assert names(history.store.jobs_with_attempts_since(since, NOW)) == expected


def test_each_attempt_overlapping_the_range_once_in_order_of_start(history: Subject) -> None:
    start, end = T0 + timedelta(minutes=12), T0 + timedelta(minutes=45)
    found = attempts_overlapping(history.store.jobs_with_attempts_since(start, NOW), start, end)
    assert [(item.job.name, item.attempt.number) for item in found] == [
        ("done", 1),
        ("twice", 1),
        ("bumped", 1),
        ("live", 1),
    ]


def test_an_item_holds_the_day_and_time_of_its_latest_attempt_end(history: Subject) -> None:
    item = history.item("twice")
    assert item is not None
    assert item["attempt_end_day"] == {"S": "2025-03-01"}
    assert item["attempt_end"] == {"S": "2025-03-01T09:15:00.000000Z"}
    waiting = history.item("waiting")
    assert waiting is not None and "attempt_end" not in waiting and "attempt_end_day" not in waiting
