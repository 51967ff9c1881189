"""A job's history through the API: earlier jobs of a reused name stay readable by their id, and a
job with more attempts than it keeps in full shows the recent ones and the count of all."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from smq_lambda.domain.jobs.model import MAX_INLINE_ATTEMPTS

from tests.adapters.bounds import attempted
from tests.api.builders import ALICE, BOB, complete, run, training_request
from tests.api.gateway import ApiGateway
from tests.support.fakes import FakeClock


def get_job(api: ApiGateway, name: str, job_id: str) -> Any:
    return api.request("GET", f"/jobs/{name}", query={"job_id": job_id})


def test_a_resubmitted_name_shows_the_newest_job_and_keeps_the_earlier_one_by_its_id(
    api: ApiGateway, store: Any, clock: FakeClock
) -> None:
    first = api.add(training_request("shared"), caller=ALICE).body
    run(store, "shared", clock())
    complete(store, "shared", clock())
    alices = api.get("shared").body

    second = api.add(training_request("shared", priority=3), caller=BOB).body
    newest = api.get("shared").body
    earlier = get_job(api, "shared", first["job_id"])

    assert second["earlier_job_ids"] == [first["job_id"]]
    assert (newest["job_id"], newest["owner"], newest["state"]) == (second["job_id"], BOB, "pending")
    assert earlier.status == 200
    assert earlier.body == alices
    assert (earlier.body["owner"], earlier.body["state"]) == (ALICE, "completed")
    assert get_job(api, "shared", second["job_id"]).body == newest


def test_an_unknown_job_id_is_not_found(api: ApiGateway) -> None:
    api.add(training_request("only-once"))

    reply = get_job(api, "only-once", "0123456789abcdef0123456789abcdef")

    assert reply.status == 404


@pytest.mark.parametrize("job_id", ["a#b", "x" * 65, "", "sp ace"])
def test_a_malformed_job_id_is_refused_naming_the_field(api: ApiGateway, job_id: str) -> None:
    api.add(training_request("some-job"))

    reply = get_job(api, "some-job", job_id)

    assert (reply.status, reply.body["field"]) == (400, "job_id")


def test_a_job_with_a_thousand_attempts_shows_the_recent_ones_and_counts_them_all(
    api: ApiGateway, store: Any, clock: FakeClock
) -> None:
    api.add(training_request("long-lived"))
    created = store.get("long-lived")
    lived = attempted(created, 1000, start=clock())
    store.save(replace(lived, version=created.version + 1), expected_version=created.version)

    body = api.get("long-lived").body

    assert body["attempt_count"] == 1000
    assert body["attempt_outcomes"] == {"preempted": 500, "refused": 500}
    assert [attempt["number"] for attempt in body["attempts"]] == list(range(1001 - MAX_INLINE_ATTEMPTS, 1001))
