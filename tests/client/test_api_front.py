"""The local API front: HTTP in, API Gateway REST proxy events out, handler answers back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
import yaml
from smq.api_client import SmqApiClient
from smq.local.api_front import ANONYMOUS, ROUTES, ApiFront, access_key_of

from tests.client.stub_api import StubHandler

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.yaml"
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def test_a_signed_request_becomes_a_rest_proxy_event_with_the_callers_identity(
    front: ApiFront, stub: StubHandler
) -> None:
    client = SmqApiClient(front.url)

    client.update_priority("job-1", 5)

    (event,) = stub.events
    assert event["resource"] == "/jobs/{name}"
    assert event["path"] == "/jobs/job-1"
    assert event["httpMethod"] == "PATCH"
    assert event["pathParameters"] == {"name": "job-1"}
    assert json.loads(event["body"]) == {"priority": 5}
    assert event["isBase64Encoded"] is False
    assert event["headers"]["Content-Type"] == "application/json"
    assert event["multiValueHeaders"]["Content-Type"] == ["application/json"]
    assert event["queryStringParameters"] is None
    context = event["requestContext"]
    assert context["stage"] == "prod"
    assert context["path"] == "/prod/jobs/job-1"
    assert context["resourcePath"] == "/jobs/{name}"
    assert context["requestId"]
    assert context["identity"]["userArn"] == "arn:aws:iam::000000000000:user/testing"
    assert context["identity"]["accessKey"] == "testing"
    assert context["identity"]["caller"] == "testing"
    assert stub.contexts[0].function_name == "smq-api"
    assert stub.contexts[0].aws_request_id


def test_a_key_the_stack_made_for_a_user_names_that_user(front: ApiFront, stub: StubHandler) -> None:
    front.users["testing"] = "smq-local-admin"

    SmqApiClient(front.url).update_priority("job-1", 5)

    (event,) = stub.events
    assert event["requestContext"]["identity"]["userArn"] == "arn:aws:iam::000000000000:user/smq-local-admin"
    assert event["requestContext"]["identity"]["accessKey"] == "testing"


def test_query_strings_keep_every_value(front: ApiFront, stub: StubHandler) -> None:
    requests.get(f"{front.url}/jobs?state=pending,running&pool=ml.g5.xlarge&pool=ml.p5.48xlarge", timeout=5)

    (event,) = stub.events
    assert event["queryStringParameters"] == {"state": "pending,running", "pool": "ml.p5.48xlarge"}
    assert event["multiValueQueryStringParameters"]["pool"] == ["ml.g5.xlarge", "ml.p5.48xlarge"]
    assert event["pathParameters"] is None


def test_an_unsigned_request_is_local_anonymous(front: ApiFront, stub: StubHandler) -> None:
    requests.get(f"{front.url}/pools", timeout=5)

    identity = stub.events[0]["requestContext"]["identity"]
    assert identity["userArn"] == ANONYMOUS
    assert identity["accessKey"] is None


def test_a_body_that_is_not_text_arrives_base64_encoded(front: ApiFront, stub: StubHandler) -> None:
    requests.post(f"{front.url}/add-job", data=b"\xff\xfe\x00", timeout=5)

    event = stub.events[0]
    assert event["isBase64Encoded"] is True
    assert event["body"] == "//4A"


def test_the_handlers_answer_is_written_back(front: ApiFront, stub: StubHandler) -> None:
    stub.response = {
        "statusCode": 409,
        "headers": {"Content-Type": "application/json"},
        "multiValueHeaders": {"X-Smq": ["a", "b"]},
        "body": json.dumps({"message": "a job named 'x' is already pending", "field": "TrainingJobName"}),
    }

    response = requests.post(f"{front.url}/add-job", json={}, timeout=5)

    assert response.status_code == 409
    assert response.json()["field"] == "TrainingJobName"
    assert response.headers["X-Smq"] == "a, b"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/prod/nowhere"),
        ("GET", "/jobs"),
        ("POST", "/prod/jobs"),
        ("GET", "/prod/jobs/a/b"),
        ("PUT", "/prod/pools"),
    ],
)
def test_undefined_routes_are_refused_like_api_gateway_without_calling_the_handler(
    front: ApiFront, stub: StubHandler, method: str, path: str
) -> None:
    base = front.url.removesuffix("/prod")

    response = requests.request(method, base + path, timeout=5)

    assert response.status_code == 403
    assert response.json() == {"message": "Missing Authentication Token"}
    assert stub.events == []


def test_a_failing_handler_is_a_502(front: ApiFront, stub: StubHandler) -> None:
    stub.fail = True

    response = requests.get(f"{front.url}/pools", timeout=5)

    assert response.status_code == 502
    assert response.json() == {"message": "Internal server error"}


def test_shutdown_frees_the_port(stub: StubHandler) -> None:
    front = ApiFront(stub).start()
    url = front.url

    front.shutdown()

    with pytest.raises(requests.ConnectionError):
        requests.get(f"{url}/pools", timeout=2)


def test_routes_are_the_openapi_documents() -> None:
    document = yaml.safe_load(OPENAPI.read_text())
    documented = {
        path: frozenset(method.upper() for method in operations if method in HTTP_METHODS)
        for path, operations in document["paths"].items()
    }

    assert documented == ROUTES


@pytest.mark.parametrize(
    ("header", "key"),
    [
        (
            (
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240501/us-east-1/execute-api/aws4_request, "
                "SignedHeaders=host;x-amz-date, Signature=abc"
            ),
            "AKIDEXAMPLE",
        ),
        ("Bearer token", None),
        ("AWS4-HMAC-SHA256 SignedHeaders=host", None),
        (None, None),
    ],
)
def test_the_access_key_is_read_from_the_authorization_header(header: str | None, key: str | None) -> None:
    assert access_key_of(header) == key
