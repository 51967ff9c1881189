"""No input produces a 500: random methods, paths, queries and bodies through the real handler.

The table is real (moto DynamoDB with the template's indexes), so inputs that DynamoDB itself would
refuse (empty or oversized keys, odd page tokens) are exercised too. Every answer must be a 2xx or a
4xx in a shape openapi.yaml documents, a 4xx must leave the table exactly as it was, and a request
queued with 202 must be one boto3 would send (botocore's ParamValidator on SageMaker's shape).
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
from collections.abc import Callable
from typing import Any

import hypothesis
import pytest
from botocore.validate import ParamValidator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from smq_lambda.adapters.page_token import encode_page_token
from smq_lambda.domain.sagemaker.request_shape import CREATE_TRAINING_JOB, input_shape

from tests.api.builders import ADMIN, ALICE, BOB, G5, P5, run, training_request
from tests.api.gateway import LAMBDA_CONTEXT, ApiGateway, api_event, check_exchange
from tests.support.fakes import FakeClock
from tests.support.request_shapes import values_for

KNOWN_NAMES = ["seed-pending", "seed-running", "fuzz-job"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)

REQUEST_PATHS = [
    "TrainingJobName",
    "RoleArn",
    "AlgorithmSpecification",
    "AlgorithmSpecification.TrainingImage",
    "AlgorithmSpecification.TrainingInputMode",
    "OutputDataConfig",
    "OutputDataConfig.S3OutputPath",
    "ResourceConfig",
    "ResourceConfig.InstanceType",
    "ResourceConfig.InstanceCount",
    "ResourceConfig.InstanceGroups",
    "ResourceConfig.VolumeSizeInGB",
    "StoppingCondition",
    "StoppingCondition.MaxRuntimeInSeconds",
    "CheckpointConfig",
    "HyperParameters",
    "HyperParameters.epochs",
    "Tags",
    "Environment",
    "InputDataConfig",
    "VpcConfig",
    "EnableManagedSpotTraining",
    "OutputDataConfig.CompressionType",
    "AlgorithmSpecification.ContainerEntrypoint",
    "ResourceConfig.KeepAlivePeriodInSeconds",
]
SHAPE = input_shape(CREATE_TRAINING_JOB)


def member_values(path: str) -> st.SearchStrategy[Any]:
    """Values for the member at a dotted path: shaped like SageMaker's model of it, or any JSON."""
    shape = SHAPE
    for part in path.split("."):
        shape = shape.value if shape.type_name == "map" else shape.members[part]
    return values_for(shape, depth=3)


FRESH_NAME = "fuzz-fresh"
"""A stand-in each example replaces with a name never used before, so 202 stays possible."""
fresh_names = itertools.count()


@st.composite
def mutated_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A request, valid or not for the queue, with a few members replaced or removed."""
    request = training_request(
        draw(st.sampled_from([*KNOWN_NAMES, "fuzz-other"])),
        priority=draw(st.none() | st.integers(-2_000_000, 2_000_000) | st.text(max_size=8)),
        instance_type=draw(st.sampled_from([G5, P5, "ml.c5.xlarge"])),
        instances=draw(st.integers(-1, 6)),
    )
    return mutate(draw, request)


@st.composite
def queueable_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A request the queue would take under a fresh name, with a few members replaced or removed."""
    request = training_request(
        FRESH_NAME,
        priority=draw(st.none() | st.integers(-5, 5)),
        instance_type=draw(st.sampled_from([G5, P5])),
        instances=draw(st.integers(1, 2)),
    )
    return mutate(draw, request)


def mutate(draw: st.DrawFn, request: dict[str, Any]) -> dict[str, Any]:
    """Replace members with random JSON or SageMaker-shaped values, or remove them."""
    for path in draw(st.lists(st.sampled_from(REQUEST_PATHS), max_size=3)):
        *parents, last = path.split(".")
        target: Any = request
        for part in parents:
            target = target.get(part) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            continue
        if draw(st.booleans()):
            target.pop(last, None)
        else:
            target[last] = draw(member_values(path))
    return request


bodies = st.one_of(
    st.none(),
    st.text(max_size=200),
    json_values.map(json.dumps),
    mutated_requests().map(json.dumps),
    st.builds(lambda value: json.dumps({"priority": value}), json_values | st.integers()),
)

job_names = st.sampled_from(KNOWN_NAMES) | st.text(min_size=1, max_size=80).filter(lambda text: "/" not in text)

paths = st.one_of(
    st.sampled_from(["/add-job", "/jobs", "/pools", "/costs", "/", "/jobs/"]),
    job_names.map(lambda name: f"/jobs/{name}"),
    st.text(max_size=40).map(lambda text: f"/{text}"),
)

query_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["all", "pending", "pending,running", "1", "100", G5, ALICE, "owner", "tag:project", "30d", "2024-01-01"]
    ),
    st.text(max_size=40).map(encode_page_token),
)
queries = st.none() | st.dictionaries(
    st.sampled_from(["state", "pool", "owner", "limit", "next_token", "by", "since", "other"]), query_values, max_size=4
)


@pytest.fixture
def seeded_handler(api: ApiGateway, store: Any, clock: FakeClock) -> Any:
    """The handler over a table holding a pending and a running job of alice."""
    for name in ("seed-pending", "seed-running"):
        assert api.add(training_request(name)).status == 202
    run(store, "seed-running", clock())
    return api.handler


def scaled(examples: int) -> int:
    """`examples` under the thorough profile (100 by default); proportionally fewer under `make
    test-fast`'s."""
    return max(examples * settings.default.max_examples // 100, 10)


@settings(max_examples=scaled(250), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from(["GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "OPTIONS"]),
    path=paths,
    body=bodies,
    query=queries,
    caller=st.sampled_from([ALICE, BOB, ADMIN, None]),
    encode=st.booleans(),
)
def test_no_input_gets_a_server_error(
    seeded_handler: Any,
    dump_table: Callable[[], list[dict[str, Any]]],
    method: str,
    path: str,
    body: str | None,
    query: dict[str, str] | None,
    caller: str | None,
    encode: bool,
) -> None:
    if encode and body is not None:
        body = base64.b64encode(body.encode("utf-8", "surrogatepass")).decode()
    event = api_event(method, path, body=body, query=query, caller=caller, is_base64=encode)

    before = dump_table()

    response = seeded_handler(copy.deepcopy(event), LAMBDA_CONTEXT)

    assert 200 <= response["statusCode"] < 500, response
    reply = json.loads(response["body"])
    if response["statusCode"] >= 400:
        assert isinstance(reply["message"], str) and reply["message"]
        assert reply["field"] is None or isinstance(reply["field"], str)
        assert dump_table() == before
    check_exchange(event, response, unknown_route_ok=True)


@settings(max_examples=scaled(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=queueable_requests())
def test_every_queued_request_is_one_boto3_would_send(api: ApiGateway, request: dict[str, Any]) -> None:
    """The scheduler sends a queued request with boto3 hours later: botocore's own ParamValidator must
    take it then, or the job fails long after its 202."""
    if request.get("TrainingJobName") == FRESH_NAME:
        request["TrainingJobName"] = f"fuzz-{next(fresh_names)}"

    reply = api.add(request)

    hypothesis.event(f"answered {reply.status}")
    if reply.status == 202:
        report = ParamValidator().validate(request, SHAPE)
        assert not report.has_errors(), f"queued a request boto3 would refuse to send: {report.generate_report()}"
    else:
        assert reply.status in (400, 409), reply.body
