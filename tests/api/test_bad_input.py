"""Every bad input of the issue, through the real handler on moto DynamoDB.

Each case asserts the 4xx status, that the body names the field (and the message names it too),
that the table is exactly as before (a full dump) and that no scheduling pass was asked for.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from smq_lambda.adapters.page_token import encode_page_token
from smq_lambda.handlers.api import MAX_BODY_BYTES
from smq_lambda.service.submission import REQUIRED_MEMBERS

from tests.api.builders import (
    ALICE,
    BOB,
    G5,
    OTHER_ROLE,
    P5,
    TABLE,
    complete,
    instance_groups,
    replaced,
    run,
    training_request,
    without,
)
from tests.api.gateway import ApiGateway, Reply
from tests.support.fakes import FakeClock, RecordingTrigger

VALID = training_request("fresh-job")


@pytest.fixture(scope="module")
def seed_items() -> list[dict[str, Any]]:
    """The seeded table, filled by the first test and replayed into the table for the others."""
    return []


@pytest.fixture
def seeded(
    api: ApiGateway,
    store: Any,
    clock: FakeClock,
    trigger: RecordingTrigger,
    dynamodb: Any,
    dump_table: Callable[[], list[dict[str, Any]]],
    seed_items: list[dict[str, Any]],
) -> None:
    """alice's pending, running and completed jobs, so refusals have something to leave alone."""
    if seed_items:
        puts = [{"PutRequest": {"Item": item}} for item in seed_items]
        dynamodb.batch_write_item(RequestItems={TABLE: puts})
    else:
        for name in ("queued-job", "running-job", "done-job"):
            assert api.add(training_request(name)).status == 202
        run(store, "running-job", clock())
        run(store, "done-job", clock())
        complete(store, "done-job", clock())
        seed_items.extend(dump_table())
    trigger.kicks.clear()


@pytest.fixture
def refused(
    seeded: None, dump_table: Callable[[], list[dict[str, Any]]], trigger: RecordingTrigger
) -> Callable[[Callable[[], Reply], int, str | None], Reply]:
    """Run a request that must be refused; check status, field, and that nothing changed."""

    def check(call: Callable[[], Reply], status: int, field: str | None) -> Reply:
        before = dump_table()
        reply = call()
        assert (reply.status, reply.field) == (status, field), reply.body
        assert reply.body["message"]
        if status == 400 and field is not None:
            assert field in reply.body["message"]
        assert dump_table() == before
        assert trigger.kicks == []
        return reply

    return check


ADD_CASES: list[tuple[str, Any, str | None]] = [
    *[(f"missing {member}", without(VALID, member), member) for member in REQUIRED_MEMBERS],
    ("body is a list", [VALID], None),
    ("body is a string", "fresh-job", None),
    ("name with underscore", replaced(VALID, "TrainingJobName", "fresh_job"), "TrainingJobName"),
    ("name of 64 characters", replaced(VALID, "TrainingJobName", "a" * 64), "TrainingJobName"),
    ("name starting with a hyphen", replaced(VALID, "TrainingJobName", "-fresh"), "TrainingJobName"),
    ("name ending with a newline", replaced(VALID, "TrainingJobName", "fresh\n"), "TrainingJobName"),
    ("name not a string", replaced(VALID, "TrainingJobName", 42), "TrainingJobName"),
    ("priority not an integer", training_request("fresh-job", priority="high"), "Tags.priority"),
    ("priority a decimal", training_request("fresh-job", priority="1.5"), "Tags.priority"),
    ("priority above range", training_request("fresh-job", priority=1_000_001), "Tags.priority"),
    ("priority below range", training_request("fresh-job", priority=-1_000_001), "Tags.priority"),
    ("priority tag twice", replaced(VALID, "Tags", [{"Key": "priority", "Value": "1"}] * 2), "Tags[1].Key"),
    (
        "expected duration not a duration",
        replaced(VALID, "Tags", [{"Key": "smq:expected-duration", "Value": "an hour"}]),
        "Tags[smq:expected-duration]",
    ),
    (
        "expected duration zero",
        replaced(VALID, "Tags", [{"Key": "smq:expected-duration", "Value": "0m"}]),
        "Tags[smq:expected-duration]",
    ),
    ("unknown pool", training_request("fresh-job", instance_type="ml.c5.xlarge"), "ResourceConfig.InstanceType"),
    (
        "unknown pool in an instance group",
        replaced(VALID, "ResourceConfig", instance_groups((G5, 1), ("ml.c5.xlarge", 1))),
        "ResourceConfig.InstanceGroups[1].InstanceType",
    ),
    ("larger than its pool", training_request("fresh-job", instances=5), "ResourceConfig.InstanceCount"),
    (
        "instance groups larger than their pool together",
        replaced(VALID, "ResourceConfig", instance_groups((P5, 1), (G5, 1), (P5, 2))),
        "ResourceConfig.InstanceGroups[2].InstanceCount",
    ),
    ("no instances", training_request("fresh-job", instances=0), "ResourceConfig.InstanceCount"),
    ("instance count a string", replaced(VALID, "ResourceConfig.InstanceCount", "2"), "ResourceConfig.InstanceCount"),
    ("instance count a boolean", replaced(VALID, "ResourceConfig.InstanceCount", True), "ResourceConfig.InstanceCount"),
    ("no instance type", without(VALID, "ResourceConfig.InstanceType"), "ResourceConfig.InstanceType"),
    ("no instance count", without(VALID, "ResourceConfig.InstanceCount"), "ResourceConfig.InstanceCount"),
    (
        "instance type beside instance groups",
        replaced(VALID, "ResourceConfig.InstanceGroups", instance_groups((G5, 1))["InstanceGroups"]),
        "ResourceConfig.InstanceType",
    ),
    (
        "empty instance groups",
        replaced(VALID, "ResourceConfig", {"InstanceGroups": []}),
        "ResourceConfig.InstanceGroups",
    ),
    ("instance type malformed", training_request("fresh-job", instance_type="g5"), "ResourceConfig.InstanceType"),
    (
        "instance type too long for an index key",
        training_request("fresh-job", instance_type="ml." + "g" * 3000 + ".xlarge"),
        "ResourceConfig.InstanceType",
    ),
    ("role not allowed", replaced(VALID, "RoleArn", OTHER_ROLE), "RoleArn"),
    ("role not an ARN", replaced(VALID, "RoleArn", "SageMakerTrainingRole"), "RoleArn"),
    ("algorithm not an object", replaced(VALID, "AlgorithmSpecification", "pytorch"), "AlgorithmSpecification"),
    (
        "no input mode",
        without(VALID, "AlgorithmSpecification.TrainingInputMode"),
        "AlgorithmSpecification.TrainingInputMode",
    ),
    ("no image", without(VALID, "AlgorithmSpecification.TrainingImage"), "AlgorithmSpecification.TrainingImage"),
    ("output not in S3", replaced(VALID, "OutputDataConfig.S3OutputPath", "/tmp/out"), "OutputDataConfig.S3OutputPath"),
    ("output without a path", replaced(VALID, "OutputDataConfig", {}), "OutputDataConfig.S3OutputPath"),
    (
        "zero max runtime",
        replaced(VALID, "StoppingCondition.MaxRuntimeInSeconds", 0),
        "StoppingCondition.MaxRuntimeInSeconds",
    ),
    (
        "checkpoint without S3 URI",
        replaced(VALID, "CheckpointConfig", {"LocalPath": "/opt/ml/c"}),
        "CheckpointConfig.S3Uri",
    ),
    ("tags not a list", replaced(VALID, "Tags", {"priority": "1"}), "Tags"),
    ("tag the queue sets", replaced(VALID, "Tags", [{"Key": "smq:job", "Value": "x"}]), "Tags[0].Key"),
    ("tag without value", replaced(VALID, "Tags", [{"Key": "team"}]), "Tags[0].Value"),
    # Nested members, checked against SageMaker's own shape; the first four were queued before.
    ("hyperparameter a number", replaced(VALID, "HyperParameters", {"epochs": 2}), "HyperParameters.epochs"),
    ("environment value a number", replaced(VALID, "Environment", {"SEED": 7}), "Environment.SEED"),
    ("volume size null", replaced(VALID, "ResourceConfig.VolumeSizeInGB", None), "ResourceConfig.VolumeSizeInGB"),
    ("input config a string", replaced(VALID, "InputDataConfig", "s3://smq-test-bucket/train"), "InputDataConfig"),
    ("tag key with a brace", replaced(VALID, "Tags", [{"Key": "bad{key}", "Value": "v"}]), "Tags[0].Key"),
    ("unknown member", replaced(VALID, "ResourceConfig.InstanceCont", 1), "ResourceConfig.InstanceCont"),
    ("input mode unknown", replaced(VALID, "AlgorithmSpecification.TrainingInputMode", "Stream"), "AlgorithmSpecification.TrainingInputMode"),
    ("49 tags", replaced(VALID, "Tags", [{"Key": f"k{i}", "Value": "v"} for i in range(49)]), "Tags"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_body", "field"), [case[1:] for case in ADD_CASES], ids=[case[0] for case in ADD_CASES]
)
def test_add_refuses_bad_requests(refused: Any, api: ApiGateway, request_body: Any, field: str | None) -> None:
    refused(lambda: api.add(request_body), 400, field)


@pytest.mark.parametrize(
    "body",
    ['{"TrainingJobName": ', "{'TrainingJobName': 'x'}", "", "NaN]", "[" * 100_000],
    ids=["truncated", "single quotes", "empty", "garbage", "nested too deeply"],
)
def test_add_refuses_malformed_json(refused: Any, api: ApiGateway, body: str) -> None:
    reply = refused(lambda: api.request("POST", "/add-job", body=body), 400, None)
    assert "JSON" in reply.body["message"]


def test_add_refuses_invalid_base64(refused: Any, api: ApiGateway) -> None:
    refused(lambda: api.request("POST", "/add-job", body="not base64!", is_base64=True), 400, None)


def test_add_refuses_a_body_over_256_kb(refused: Any, api: ApiGateway) -> None:
    request = replaced(VALID, "HyperParameters", {"blob": "x" * MAX_BODY_BYTES})
    reply = refused(lambda: api.add(request), 413, None)
    assert "256 KB" in reply.body["message"]


def test_add_refuses_a_request_too_large_as_stored(refused: Any, api: ApiGateway) -> None:
    # Under 256 KB as UTF-8, but every "日" (three bytes) is stored as a six-byte JSON escape.
    request = replaced(VALID, "HyperParameters", {f"blob{index}": "日" * 2500 for index in range(30)})
    assert len(json.dumps(request, ensure_ascii=False).encode()) < MAX_BODY_BYTES

    reply = refused(lambda: api.request("POST", "/add-job", body=json.dumps(request, ensure_ascii=False)), 413, None)
    assert "as stored" in reply.body["message"]


def test_add_refuses_a_base64_body_over_256_kb(refused: Any, api: ApiGateway) -> None:
    request = replaced(VALID, "HyperParameters", {"blob": "x" * MAX_BODY_BYTES})
    encoded = base64.b64encode(json.dumps(request).encode()).decode()
    refused(lambda: api.request("POST", "/add-job", body=encoded, is_base64=True), 413, None)


@pytest.mark.parametrize("name", ["queued-job", "running-job"])
@pytest.mark.parametrize("caller", ["owner", "someone else"])
def test_add_refuses_the_name_of_an_unfinished_job(refused: Any, api: ApiGateway, name: str, caller: str) -> None:
    request = training_request(name, priority=7)
    reply = refused(lambda: api.add(request, caller=BOB if caller == "someone else" else ALICE), 409, "TrainingJobName")
    assert name in reply.body["message"]


PRIORITY_BODIES: list[tuple[str, str, int, str | None]] = [
    ("priority a string", '{"priority": "5"}', 400, "priority"),
    ("priority a decimal", '{"priority": 1.5}', 400, "priority"),
    ("priority a boolean", '{"priority": true}', 400, "priority"),
    ("priority null", '{"priority": null}', 400, "priority"),
    ("priority above range", '{"priority": 1000001}', 400, "priority"),
    ("priority below range", '{"priority": -1000001}', 400, "priority"),
    ("priority missing", "{}", 400, "priority"),
    ("body a list", "[5]", 400, "priority"),
    ("malformed JSON", '{"priority": ', 400, None),
    ("empty body", "", 400, None),
    ("body over 256 KB", json.dumps({"priority": 1, "pad": "x" * MAX_BODY_BYTES}), 413, None),
]


@pytest.mark.parametrize(
    ("body", "status", "field"), [case[1:] for case in PRIORITY_BODIES], ids=[case[0] for case in PRIORITY_BODIES]
)
def test_priority_change_refuses_bad_bodies(
    refused: Any, api: ApiGateway, body: str, status: int, field: str | None
) -> None:
    refused(lambda: api.request("PATCH", "/jobs/queued-job", body=body), status, field)


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
@pytest.mark.parametrize("name", ["queued-job", "running-job"])
def test_another_owner_is_forbidden(refused: Any, api: ApiGateway, method: str, name: str) -> None:
    body = '{"priority": 9}' if method == "PATCH" else None
    reply = refused(lambda: api.request(method, f"/jobs/{name}", body=body, caller=BOB), 403, "name")
    assert BOB in reply.body["message"]


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
@pytest.mark.parametrize("name", ["no-such-job", "a" * 64, "not_a_valid_name"])
def test_unknown_job_is_not_found(refused: Any, api: ApiGateway, method: str, name: str) -> None:
    body = '{"priority": 9}' if method == "PATCH" else None
    refused(lambda: api.request(method, f"/jobs/{name}", body=body), 404, "name")


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_acting_on_a_finished_job_conflicts(refused: Any, api: ApiGateway, method: str) -> None:
    body = '{"priority": 9}' if method == "PATCH" else None
    reply = refused(lambda: api.request(method, "/jobs/done-job", body=body), 409, "name")
    assert "completed" in reply.body["message"]


LIST_QUERIES: list[tuple[dict[str, str], str]] = [
    ({"limit": "0"}, "limit"),
    ({"limit": "101"}, "limit"),
    ({"limit": "ten"}, "limit"),
    ({"limit": "-1"}, "limit"),
    ({"state": "bogus"}, "state"),
    ({"state": "pending,"}, "state"),
    ({"state": "all,pending"}, "state"),
    ({"pool": ""}, "pool"),
    ({"pool": "g5 xlarge"}, "pool"),
    ({"pool": "ml." + "g" * 3000 + ".xlarge"}, "pool"),
    ({"pool": "ml.g5.xlarge:ondemand"}, "pool"),
    ({"pool": "plan:"}, "pool"),
    ({"pool": "plan:-x"}, "pool"),
    ({"owner": ""}, "owner"),
    ({"next_token": "not-a-token"}, "next_token"),
    ({"next_token": encode_page_token("x")[:-3] + "!!!"}, "next_token"),
    ({"next_token": encode_page_token("x" * 2000)}, "next_token"),
]


@pytest.mark.parametrize(("query", "field"), LIST_QUERIES, ids=[json.dumps(query) for query, _ in LIST_QUERIES])
def test_listing_refuses_bad_query_parameters(refused: Any, api: ApiGateway, query: dict[str, str], field: str) -> None:
    refused(lambda: api.list_jobs(**query), 400, field)


@pytest.mark.parametrize("pool", ["ml.g5.xlarge", "ml.g5.xlarge:spot", "plan:p5-reserved"])
def test_listing_accepts_every_kind_of_pool_name(api: ApiGateway, pool: str) -> None:
    assert api.list_jobs(pool=pool).status == 200
