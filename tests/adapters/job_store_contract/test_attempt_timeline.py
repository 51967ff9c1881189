"""The JobStore contract: `jobs_with_attempts_since`, what GET /attempts reads (live jobs, then
jobs whose latest attempt ended since a time, across UTC days, an earlier job of a reused name
too), in HistoryPosition order and resumable after any position, on the fake and on DynamoDB."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

import pytest
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.ports import HistoryEntry, HistoryPosition
from smq_lambda.service.timeline import timeline_page

from tests.adapters.builders import T0, job
from tests.adapters.job_store_contract.subjects import STORES, Subject, make_subject, move

NOW = T0 + timedelta(hours=1)


def started(at: datetime) -> list:
    return [
        lambda current: lifecycle.start(current, at, reason="fits"),
        lambda current: lifecycle.mark_running(current, at),
    ]


def completed(at: datetime) -> list:
    return [
        lambda current: lifecycle.finish(current, JobState.COMPLETED, at, outcome=AttemptOutcome.COMPLETED, reason=None)
    ]


def preempted(at: datetime) -> list:
    return [
        lambda current: lifecycle.request_stop(current, at, preempt=True, reason="preempted"),
        lambda current: lifecycle.requeue(current, at, outcome=AttemptOutcome.PREEMPTED, reason="preempted"),
    ]


@pytest.fixture(scope="module", params=STORES)
def history(request: pytest.FixtureRequest) -> Subject:
    """`done` ran 0-30 min; `bumped` ran 10-20 min and waits again; `live` runs since 40 min;
    `waiting` never ran; `old` ran three days ago; `twice` ran 5-15 min, then since 50 min; an
    earlier `redo` ran 2-8 min, and the `redo` that reused its name waits."""
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
        "redo": [*started(T0 + timedelta(minutes=2)), *completed(T0 + timedelta(minutes=8))],
    }
    for minute, (name, path) in enumerate(steps.items()):
        subject.store.create(job(name, minute=minute - 60 * 24 * 4))
        move(subject.store, name, *path)
    subject.store.create(job("redo", minute=-60))
    return subject


def names(entries: Iterable[HistoryEntry]) -> list[str]:
    return sorted(entry.job.name for entry in entries)


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        (T0 + timedelta(minutes=25), ["done", "live", "twice"]),
        (T0 + timedelta(minutes=18), ["bumped", "done", "live", "twice"]),
        (T0 + timedelta(minutes=5), ["bumped", "done", "live", "redo", "twice"]),
        (T0 - timedelta(days=4), ["bumped", "done", "live", "old", "redo", "twice"]),
        (NOW, ["live", "twice"]),
    ],
)
def test_reads_live_jobs_and_jobs_that_ended_an_attempt_since(
    history: Subject, since: datetime, expected: list[str]
) -> None:
    assert names(history.store.jobs_with_attempts_since(since, NOW)) == expected


def test_reads_live_jobs_first_then_by_day_and_end_each_job_once(history: Subject) -> None:
    read = list(history.store.jobs_with_attempts_since(T0 - timedelta(days=4), NOW, page_size=1))

    positions = [entry.position for entry in read]
    assert positions == sorted(set(positions))
    assert [(entry.job.name, entry.position.ended, entry.position.partition) for entry in read] == [
        ("live", False, "running"),
        ("twice", False, "running"),
        ("old", True, "2025-02-26"),
        ("redo", True, "2025-03-01"),
        ("bumped", True, "2025-03-01"),
        ("done", True, "2025-03-01"),
    ]


def test_a_read_after_any_position_continues_with_the_rest(history: Subject) -> None:
    since = T0 - timedelta(days=4)
    read = list(history.store.jobs_with_attempts_since(since, NOW))

    for index, entry in enumerate(read):
        rest = history.store.jobs_with_attempts_since(since, NOW, after=entry.position, page_size=1)
        assert [each.position for each in rest] == [each.position for each in read[index + 1 :]]


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (HistoryPosition(True, "2025-03-01", "2025-03-01T08:00:00.000000Z", "zzz"), ["bumped", "done"]),
        (HistoryPosition(True, "2025-03-01", "2025-03-01T09:25:00.000000Z", "zzz"), ["done"]),
        (
            HistoryPosition(False, "preempting", "99999999#2025-03-01T09:00:00.000000Z#zzz", "zzz"),
            ["bumped", "done", "live", "twice"],
        ),
        (HistoryPosition(True, "2025-02-28", "2025-02-28T23:00:00.000000Z", "zzz"), ["bumped", "done"]),
    ],
    ids=["before-the-range", "between-two-jobs", "after-every-live-job-of-a-state", "an-earlier-day"],
)
def test_a_position_no_job_holds_continues_after_where_it_would_be(
    history: Subject, after: HistoryPosition, expected: list[str]
) -> None:
    """A token of another range, or of a job that has moved since: a place in the order, not a job."""
    since = T0 + timedelta(minutes=18)

    assert names(history.store.jobs_with_attempts_since(since, NOW, after=after)) == expected


def test_each_attempt_overlapping_the_range_once_in_order_of_start(history: Subject) -> None:
    start, end = T0 + timedelta(minutes=12), T0 + timedelta(minutes=45)
    page = timeline_page(history.store.jobs_with_attempts_since(start, NOW), start, end, limit=100, resume=None)
    assert [(item.job.name, item.attempt.number) for item in page.attempts] == [
        ("done", 1),
        ("twice", 1),
        ("bumped", 1),
        ("live", 1),
    ]
    assert page.next is None


def test_an_item_holds_the_day_and_time_of_its_latest_attempt_end(history: Subject) -> None:
    item = history.item("twice")
    assert item is not None
    assert item["attempt_end_day"] == {"S": "2025-03-01"}
    assert item["attempt_end"] == {"S": "2025-03-01T09:15:00.000000Z"}
    waiting = history.item("waiting")
    assert waiting is not None and "attempt_end" not in waiting and "attempt_end_day" not in waiting
