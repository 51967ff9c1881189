"""GET /attempts through the real handler on moto DynamoDB, every exchange checked against
openapi.yaml: the attempts overlapping a range, of every owner, and what the range may be."""

from __future__ import annotations

from datetime import timedelta

import pytest
from smq_lambda.adapters.dynamodb_store import DynamoJobStore

from tests.api.builders import BOB, G5, complete, run, training_request
from tests.api.gateway import ApiGateway
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
