"""GET /attempts through the real handler on moto DynamoDB, every exchange checked against
openapi.yaml: the attempts overlapping a range, of every owner, what the range may be, and pages."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta
from typing import Any

import pytest
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.outcomes import AttemptOutcome

from tests.api.builders import BOB, G5, complete, run, training_request
from tests.api.gateway import ApiGateway, Reply
from tests.support.fakes import FakeClock


def iso(clock: FakeClock, **delta: float) -> str:
    return (clock.now() + timedelta(**delta)).isoformat().replace("+00:00", "Z")


def test_lists_attempts_of_every_owner_overlapping_the_range(
    api: ApiGateway, store: DynamoJobStore, clock: FakeClock
) -> None:
    api.add(training_request("finished"))
    api.add(training_request("running"), caller=BOB)
    api.add(training_request("waiting"))
    run(store, "finished", clock.advance(minutes=1))
    complete(store, "finished", clock.advance(minutes=10))
    run(store, "running", clock.advance(minutes=1))
    clock.advance(minutes=5)

    reply = api.request("GET", "/attempts", query={"from": iso(clock, hours=-1)}, caller=BOB)

    assert reply.status == 200, reply.body
    rows = [(row["name"], row["number"], row["outcome"], row["pool"], row["state"]) for row in reply.body["attempts"]]
    assert rows == [("finished", 1, "completed", G5, "completed"), ("running", 1, None, G5, "running")]
    assert reply.body["to"] is None
    later = api.request("GET", "/attempts", query={"from": iso(clock, minutes=-5), "to": iso(clock)})
    assert [row["name"] for row in later.body["attempts"]] == ["running"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({}, "from"),
        ({"from": "yesterday"}, "from"),
        ({"from": "2026-11-26T09:00:00"}, "from"),
        ({"from": "2020-01-01T00:00:00Z"}, "from"),
    ],
)
def test_a_bad_or_unbounded_range_is_refused(api: ApiGateway, query: dict[str, str], field: str) -> None:
    reply = api.request("GET", "/attempts", query=query)
    assert reply.status == 400
    assert reply.field == field


def test_a_range_that_ends_before_it_starts_is_refused(api: ApiGateway, clock: FakeClock) -> None:
    reply = api.request("GET", "/attempts", query={"from": iso(clock, minutes=-1), "to": iso(clock, minutes=-2)})
    assert (reply.status, reply.field) == (400, "to")


def preempt(store: DynamoJobStore, name: str, now: datetime) -> None:
    """End a running job's attempt by preemption, back to pending, as a pass and its stop event would."""
    job = store.get(name)
    assert job is not None
    stopping = store.save(
        lifecycle.request_stop(job, now, preempt=True, reason="preempted"), expected_version=job.version
    )
    store.save(
        lifecycle.requeue(stopping, now, outcome=AttemptOutcome.PREEMPTED, reason="preempted"),
        expected_version=stopping.version,
    )


def every_page(api: ApiGateway, query: dict[str, str]) -> list[Reply]:
    replies = [api.request("GET", "/attempts", query=query)]
    while replies[-1].status == 200 and replies[-1].body["next_token"] is not None:
        replies.append(api.request("GET", "/attempts", query={**query, "next_token": replies[-1].body["next_token"]}))
    return replies


def test_many_attempts_come_in_pages_each_attempt_once(
    api: ApiGateway, store: DynamoJobStore, clock: FakeClock
) -> None:
    """Ended attempts over two UTC days, live ones, and jobs of three attempts that a page of two
    must split: every attempt once across the pages, none of which holds more than `limit`."""
    clock.set(datetime.fromisoformat("2026-11-25T20:00:00+00:00"))
    expected: set[tuple[str, int]] = set()
    for index in range(12):
        name = f"job-{index:02d}"
        api.add(training_request(name))
        attempts = 1 + index % 3
        for number in range(1, attempts + 1):
            run(store, name, clock.advance(minutes=20))
            expected.add((name, number))
            if number < attempts:
                preempt(store, name, clock.advance(minutes=5))
        if index % 4:
            complete(store, name, clock.advance(minutes=7))
    assert clock.now().date() > datetime.fromisoformat("2026-11-25T20:00:00+00:00").date()

    replies = every_page(api, {"from": "2026-11-25T19:00:00Z", "limit": "2"})

    assert all(reply.status == 200 for reply in replies), [reply.body for reply in replies]
    listed = [(row["name"], row["number"]) for reply in replies for row in reply.body["attempts"]]
    assert sorted(listed) == sorted(expected)
    assert len(listed) == len(expected) == 24
    assert all(len(reply.body["attempts"]) <= 2 for reply in replies)
    assert len(replies) >= 12
    whole = api.request("GET", "/attempts", query={"from": "2026-11-25T19:00:00Z"})
    assert whole.body["next_token"] is None
    assert sorted((row["name"], row["number"]) for row in whole.body["attempts"]) == sorted(expected)
    starts = [row["started_at"] for row in whole.body["attempts"]]
    assert starts == sorted(starts)


def forged(payload: str) -> str:
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"next_token": "not-a-token"}, "next_token"),
        ({"next_token": "x" * 600}, "next_token"),
        ({"next_token": forged('{"v":1,"after":"00000000#2025-05-01T12:00:14.000000Z#a"}')}, "next_token"),
        ({"next_token": forged('{"v":1,"at":[true,"2026-11-26","yesterday","a"]}')}, "next_token"),
        (
            {"next_token": forged('{"v":1,"at":[false,"pending","00000000#2025-05-01T12:00:14.000000Z#a","a"]}')},
            "next_token",
        ),
    ],
    ids=["zero", "over-max", "word", "negative", "garbage", "too-long", "jobs-token", "bad-time", "not-live"],
)
def test_a_bad_limit_or_token_is_refused_naming_it(
    api: ApiGateway, clock: FakeClock, extra: dict[str, Any], field: str
) -> None:
    reply = api.request("GET", "/attempts", query={"from": iso(clock, hours=-1), **extra})
    assert (reply.status, reply.field) == (400, field), reply.body
