"""GET /jobs/{name}?include=request: the job's stored CreateTrainingJob request, only when asked."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.builders import ADMIN, ALICE, BOB, CHECKPOINT_PREFIX, complete, run, training_request
from tests.api.gateway import ApiGateway, Reply
from tests.support.fakes import FakeClock


def get_with(api: ApiGateway, name: str, *, caller: str = ALICE, **query: str) -> Reply:
    return api.request("GET", f"/jobs/{name}", query=query, caller=caller)


def test_include_request_returns_the_request_the_queue_will_send(api: ApiGateway, store: Any) -> None:
    submitted = training_request("vit-small", priority=3, HyperParameters={"lr": "0.001", "epochs": "10"})
    api.add(submitted)

    reply = get_with(api, "vit-small", include="request")

    assert reply.status == 200
    job_id = reply.body["job_id"]
    checkpoint = {"S3Uri": f"{CHECKPOINT_PREFIX}/vit-small/{job_id}/"}
    assert reply.body["request"] == {**submitted, "CheckpointConfig": checkpoint}
    assert reply.body["request"] == store.get("vit-small").request


def test_a_plain_get_leaves_the_request_out(api: ApiGateway) -> None:
    api.add(training_request("vit-small"))

    assert "request" not in api.get("vit-small").body


def test_only_the_owner_or_an_admin_reads_a_jobs_request(api: ApiGateway) -> None:
    api.add(training_request("alices", Environment={"WANDB_API_KEY": "secret"}))

    refused = get_with(api, "alices", caller=BOB, include="request")
    by_admin = get_with(api, "alices", caller=ADMIN, include="request")

    assert refused.status == 403 and refused.body["field"] == "name"
    assert "secret" not in str(refused.body)
    assert by_admin.body["request"]["Environment"] == {"WANDB_API_KEY": "secret"}
    assert get_with(api, "alices", caller=BOB).status == 200  # the job itself stays readable


def test_an_earlier_job_of_the_name_keeps_its_own_request(api: ApiGateway, store: Any, clock: FakeClock) -> None:
    api.add(training_request("again", HyperParameters={"lr": "0.1"}))
    first = run(store, "again", clock())
    complete(store, "again", clock())
    api.add(training_request("again", HyperParameters={"lr": "0.01"}))

    earlier = get_with(api, "again", job_id=first.job_id, include="request")
    newest = get_with(api, "again", include="request")

    assert earlier.body["request"]["HyperParameters"] == {"lr": "0.1"}
    assert newest.body["request"]["HyperParameters"] == {"lr": "0.01"}


@pytest.mark.parametrize("value", ["requests", "REQUEST", "request,attempts", "attempts", ""])
def test_an_unknown_include_is_refused_naming_it(api: ApiGateway, value: str) -> None:
    api.add(training_request("vit-small"))

    reply = get_with(api, "vit-small", include=value)

    assert (reply.status, reply.field) == (400, "include")
    assert "request" in reply.body["message"]


def test_an_unknown_job_is_not_found_with_include(api: ApiGateway) -> None:
    reply = get_with(api, "nobody-submitted-this", include="request")

    assert (reply.status, reply.field) == (404, "name")
