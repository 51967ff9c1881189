"""Every route's accepted requests, through the real handler on moto DynamoDB."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.handlers.api import MAX_BODY_BYTES
from smq_lambda.scheduling.snapshot import UnpooledPolicy

from tests.api.builders import (
    ADMIN,
    ALICE,
    BOB,
    CHECKPOINT_PREFIX,
    G5,
    P5,
    complete,
    instance_groups,
    run,
    training_request,
)
from tests.api.gateway import ApiGateway
from tests.support.fakes import FakeClock, FakeConfigSource, RecordingTrigger

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def names(reply_body: dict[str, Any]) -> list[str]:
    return [job["name"] for job in reply_body["jobs"]]


def test_add_queues_the_job_and_asks_for_a_pass(api: ApiGateway, store: Any, trigger: RecordingTrigger) -> None:
    reply = api.add(training_request("vit-small", priority=5, instances=2))

    assert reply.status == 202
    body = reply.body
    assert {key: body[key] for key in ("name", "state", "priority", "pool", "instances", "demand", "owner")} == {
        "name": "vit-small",
        "state": "pending",
        "priority": 5,
        "pool": G5,
        "instances": 2,
        "demand": {G5: 2},
        "owner": ALICE,
    }
    assert (body["position"], body["training_job_name"], body["attempts"]) == (1, None, [])
    assert TIMESTAMP.fullmatch(body["submitted_at"]) and TIMESTAMP.fullmatch(body["updated_at"])
    assert body["reason"]
    assert trigger.kicks == ["vit-small submitted"]


def test_add_fixes_one_checkpoint_location_per_job(api: ApiGateway, store: Any) -> None:
    api.add(training_request("vit-small"))

    job = store.get("vit-small")
    assert re.fullmatch(r"[0-9a-f]{32}", job.job_id)
    assert job.request["CheckpointConfig"] == {"S3Uri": f"{CHECKPOINT_PREFIX}/vit-small/{job.job_id}/"}


def test_add_keeps_the_requests_own_checkpoint_config(api: ApiGateway, store: Any) -> None:
    own = {"S3Uri": "s3://team-bucket/ckpt/vit/", "LocalPath": "/opt/ml/checkpoints"}
    api.add(training_request("vit-small", CheckpointConfig=own))

    assert store.get("vit-small").request["CheckpointConfig"] == own


def test_add_keeps_the_request_as_submitted(api: ApiGateway, store: Any) -> None:
    request = training_request("vit-small", priority=3, HyperParameters={"lr": "0.001", "epochs": "10"})
    api.add(request)

    stored = dict(store.get("vit-small").request)
    stored.pop("CheckpointConfig")
    assert stored == request


def hyperparameters_taking(room: int) -> dict[str, str]:
    """HyperParameters that take `room` bytes (give or take a few) of compact JSON, within botocore's
    shape: at most 100 of them, keys of up to 256 and values of up to 2,500 characters."""
    entries: dict[str, str] = {}
    while room > 0:
        size = min(room, 256 + 2500 + 6)  # key, value, and `"":"",` around them
        key = f"{len(entries):03d}".ljust(max(3, size - 6 - 2500), "k")
        entries[key] = "x" * max(0, size - 6 - len(key))
        room -= size
    return entries


def test_a_request_just_under_the_size_limit_is_accepted(api: ApiGateway) -> None:
    request = training_request("big-but-fine", HyperParameters={})
    room = MAX_BODY_BYTES - len(json.dumps(request, separators=(",", ":"))) - len(CHECKPOINT_PREFIX) - 120
    request["HyperParameters"] = hyperparameters_taking(room)

    compact = json.dumps(request, separators=(",", ":"))

    assert len(request["HyperParameters"]) <= 100
    assert api.request("POST", "/add-job", body=compact).status == 202


def test_add_heterogeneous_instance_groups(api: ApiGateway) -> None:
    reply = api.add(training_request("hetero", ResourceConfig=instance_groups((P5, 2), (G5, 3))))

    assert reply.status == 202
    assert (reply.body["pool"], reply.body["instances"], reply.body["demand"]) == (P5, 2, {P5: 2, G5: 3})


def test_add_unpooled_type_when_unpooled_types_are_unlimited(api: ApiGateway, config: FakeConfigSource) -> None:
    config.config = replace(config.config, unpooled=UnpooledPolicy.UNLIMITED)

    reply = api.add(training_request("cpu-job", instance_type="ml.c5.xlarge", instances=50))

    assert (reply.status, reply.body["pool"]) == (202, "ml.c5.xlarge")
    pools = {pool["pool"]: pool for pool in api.pools().body["pools"]}
    assert pools["ml.c5.xlarge"] == {
        "pool": "ml.c5.xlarge",
        "capacity": None,
        "in_use": 0,
        "warm": 0,
        "pending": 1,
        "head": None,
    }


def test_the_owner_is_the_calling_principal(api: ApiGateway) -> None:
    assert api.add(training_request("bobs-job"), caller=BOB).body["owner"] == BOB


def test_a_finished_name_can_be_submitted_again(api: ApiGateway, store: Any, clock: FakeClock) -> None:
    api.add(training_request("again"))
    first = run(store, "again", clock())
    complete(store, "again", clock())

    reply = api.add(training_request("again", priority=2))

    assert (reply.status, reply.body["state"], reply.body["attempts"]) == (202, "pending", [])
    assert store.get("again").job_id != first.job_id


def test_get_shows_the_live_attempt(api: ApiGateway, store: Any, clock: FakeClock) -> None:
    api.add(training_request("live"))
    job = run(store, "live", clock())

    reply = api.get("live")

    assert reply.status == 200
    body = reply.body
    expected_name = job.attempts[0].training_job_name
    assert (body["state"], body["position"], body["training_job_name"]) == ("running", None, expected_name)
    [attempt] = body["attempts"]
    assert {key: attempt[key] for key in ("number", "training_job_name", "ended_at", "outcome")} == {
        "number": 1,
        "training_job_name": expected_name,
        "ended_at": None,
        "outcome": None,
    }
    assert TIMESTAMP.fullmatch(attempt["started_at"])


def test_get_shows_finished_history(api: ApiGateway, store: Any, clock: FakeClock) -> None:
    api.add(training_request("done"))
    run(store, "done", clock())
    complete(store, "done", clock())

    body = api.get("done").body

    assert (body["state"], body["position"]) == ("completed", None)
    assert [(a["number"], a["outcome"]) for a in body["attempts"]] == [(1, "completed")]
    assert body["training_job_name"] == body["attempts"][0]["training_job_name"], "the latest attempt, though ended"
    assert TIMESTAMP.fullmatch(body["attempts"][0]["ended_at"])


def test_positions_follow_scheduling_order_within_each_pool(api: ApiGateway) -> None:
    for name, priority, pool in [("a", 0, G5), ("b", 5, G5), ("c", 0, P5), ("d", 5, G5), ("e", -1, G5), ("f", 9, P5)]:
        api.add(training_request(name, priority=priority, instance_type=pool))

    positions = {name: api.get(name).body["position"] for name in "abcdef"}

    assert positions == {"b": 1, "d": 2, "a": 3, "e": 4, "f": 1, "c": 2}
    listed = api.list_jobs(state="pending").body
    assert names(listed) == ["f", "b", "d", "a", "c", "e"]
    assert {job["name"]: job["position"] for job in listed["jobs"]} == positions


def test_list_defaults_to_active_jobs_in_scheduling_order(api: ApiGateway, store: Any, clock: FakeClock) -> None:
    for name, priority in [("low", 1), ("high", 8), ("mid", 4), ("finished", 9)]:
        api.add(training_request(name, priority=priority))
    run(store, "mid", clock())
    run(store, "finished", clock())
    complete(store, "finished", clock())

    assert names(api.list_jobs().body) == ["high", "mid", "low"]
    assert names(api.list_jobs(state="all").body) == ["finished", "high", "mid", "low"]
    assert names(api.list_jobs(state="completed").body) == ["finished"]
    assert names(api.list_jobs(state="running,pending").body) == ["high", "mid", "low"]
    assert [job["position"] for job in api.list_jobs().body["jobs"]] == [1, None, 2]


def test_list_filters_by_pool_and_owner(api: ApiGateway) -> None:
    api.add(training_request("alice-g5"))
    api.add(training_request("alice-p5", instance_type=P5))
    api.add(training_request("bob-g5"), caller=BOB)

    assert names(api.list_jobs(pool=P5).body) == ["alice-p5"]
    assert names(api.list_jobs(owner=BOB).body) == ["bob-g5"]
    assert names(api.list_jobs(pool=G5, owner=ALICE).body) == ["alice-g5"]
    assert names(api.list_jobs(pool="ml.trn1.32xlarge").body) == []


@pytest.mark.parametrize("state", [None, "pending", "all"])
def test_list_pages_through_every_job_once(api: ApiGateway, state: str | None) -> None:
    for index in range(7):
        api.add(training_request(f"job-{index}", priority=index % 3))
    query = {"state": state} if state else {}
    everything = names(api.list_jobs(**query, limit="100").body)

    pages: list[list[str]] = []
    token: str | None = None
    while True:
        body = api.list_jobs(**query, limit="3", **({"next_token": token} if token else {})).body
        pages.append(names(body))
        token = body["next_token"]
        if token is None:
            break

    assert [len(page) for page in pages] == [3, 3, 1]
    assert [name for page in pages for name in page] == everything
    assert len(everything) == 7


def test_priority_change_resorts_the_pending_order(api: ApiGateway, trigger: RecordingTrigger) -> None:
    for name in ("first", "second", "third"):
        api.add(training_request(name))
    trigger.kicks.clear()

    reply = api.set_priority("third", 10)

    assert (reply.status, reply.body["priority"], reply.body["position"]) == (200, 10, 1)
    assert names(api.list_jobs().body) == ["third", "first", "second"]
    assert [api.get(name).body["position"] for name in ("first", "second")] == [2, 3]
    assert trigger.kicks == ["priority of third changed to 10"]

    api.set_priority("third", -5)
    assert names(api.list_jobs().body) == ["first", "second", "third"]


def test_priority_change_of_a_running_job(api: ApiGateway, store: Any, clock: FakeClock) -> None:
    api.add(training_request("busy"))
    run(store, "busy", clock())

    reply = api.set_priority("busy", 100)

    assert (reply.status, reply.body["state"], reply.body["priority"]) == (200, "running", 100)


def test_the_same_priority_writes_nothing(
    api: ApiGateway, trigger: RecordingTrigger, dump_table: Callable[[], list[dict[str, Any]]]
) -> None:
    api.add(training_request("steady", priority=3))
    trigger.kicks.clear()
    before = dump_table()

    assert api.set_priority("steady", 3).status == 200

    assert dump_table() == before
    assert trigger.kicks == []


def test_cancel_a_pending_job(api: ApiGateway, trigger: RecordingTrigger) -> None:
    api.add(training_request("waiting"))
    trigger.kicks.clear()

    reply = api.cancel("waiting")

    assert (reply.status, reply.body["state"], reply.body["position"]) == (202, "cancelled", None)
    assert ALICE in reply.body["reason"]
    assert api.get("waiting").body["state"] == "cancelled"
    assert names(api.list_jobs().body) == []
    assert trigger.kicks == ["waiting cancelled"]


@pytest.mark.parametrize("preempting", [False, True], ids=["running", "preempting"])
def test_cancel_a_live_job_stops_it(
    api: ApiGateway, store: Any, clock: FakeClock, trigger: RecordingTrigger, preempting: bool
) -> None:
    api.add(training_request("live"))
    job = run(store, "live", clock())
    if preempting:
        store.save(lifecycle.request_stop(job, clock(), preempt=True, reason="make room"), expected_version=job.version)
    trigger.kicks.clear()

    reply = api.cancel("live")

    assert (reply.status, reply.body["state"]) == (202, "stopping")
    assert reply.body["training_job_name"] == job.attempts[0].training_job_name
    assert trigger.kicks == ["live cancelled"]


def test_cancelling_a_stopping_job_again_changes_nothing(
    api: ApiGateway,
    store: Any,
    clock: FakeClock,
    trigger: RecordingTrigger,
    dump_table: Callable[[], list[dict[str, Any]]],
) -> None:
    api.add(training_request("live"))
    run(store, "live", clock())
    api.cancel("live")
    trigger.kicks.clear()
    before = dump_table()

    reply = api.cancel("live")

    assert (reply.status, reply.body["state"]) == (202, "stopping")
    assert dump_table() == before
    assert trigger.kicks == []


def test_an_admin_may_act_on_any_job(api: ApiGateway) -> None:
    api.add(training_request("alices", priority=1))

    assert api.set_priority("alices", 50, caller=ADMIN).body["priority"] == 50
    assert api.cancel("alices", caller=ADMIN).body["state"] == "cancelled"


def test_anyone_may_read_any_job(api: ApiGateway) -> None:
    api.add(training_request("alices"))

    assert api.get("alices", caller=BOB).status == 200
    assert names(api.list_jobs(caller=BOB).body) == ["alices"]


def test_an_unknown_route_is_not_found(api: ApiGateway) -> None:
    reply = api.request("GET", "/queues", unknown_route_ok=True)

    assert (reply.status, reply.field) == (404, None)


def test_a_retried_add_job_gets_the_first_answer_and_queues_nothing_new(
    api: ApiGateway, trigger: RecordingTrigger
) -> None:
    request = training_request("retried", priority=3)
    first = api.add(request)
    kicks = len(trigger.kicks)

    again = api.add(request)

    assert (first.status, again.status) == (202, 202)
    assert again.body == first.body
    assert len(trigger.kicks) == kicks, "a replay does no work"
    assert names(api.list_jobs(state="all").body) == ["retried"]


def test_the_same_name_with_another_request_or_caller_is_still_a_conflict(api: ApiGateway) -> None:
    api.add(training_request("taken", priority=3))

    changed = api.add(training_request("taken", priority=4))
    other_caller = api.add(training_request("taken", priority=3), caller=BOB)

    assert (changed.status, changed.body["field"]) == (409, "TrainingJobName")
    assert (other_caller.status, other_caller.body["field"]) == (409, "TrainingJobName")
