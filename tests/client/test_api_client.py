"""SmqApiClient: SigV4 signing, API URL discovery, and API answers turned into typed errors."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from moto import mock_aws
from smq.api_client import SmqApiClient, discover_api_url, region_of
from smq.errors import (
    AccessDenied,
    ApiUnreachable,
    ApiUrlNotFound,
    InvalidRequest,
    JobConflict,
    JobNotFound,
    PayloadTooLarge,
    SmqApiError,
)
from smq.local.api_front import ApiFront

from tests.client.stub_api import StubHandler

STACK_URL = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod"


def alice() -> boto3.Session:
    return boto3.Session(
        aws_access_key_id="AKIDALICE",
        aws_secret_access_key="alice-secret",
        aws_session_token="alice-token",
        region_name="eu-west-1",
    )


def resign(event: dict[str, Any], credentials: Credentials, region: str) -> str:
    """The signature botocore computes for the request the front received, from the headers the
    client says it signed: what API Gateway's IAM authorization recomputes."""
    headers = {name.lower(): value for name, value in event["headers"].items()}
    signed = re.search(r"SignedHeaders=([^,\s]+)", headers["authorization"]).group(1).split(";")  # type: ignore[union-attr]
    query = sorted(
        (name, value) for name, values in (event["multiValueQueryStringParameters"] or {}).items() for value in values
    )
    url = f"http://{headers['host']}{event['requestContext']['path']}"
    if query:
        url += "?" + urlencode(query, quote_via=quote, safe="")
    body = event["body"].encode() if event["body"] else None
    request = AWSRequest(event["httpMethod"], url, data=body, headers={name: headers[name] for name in signed})
    request.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(credentials, "execute-api", region)
    return signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)


def signature_of(event: dict[str, Any]) -> str:
    return re.search(r"Signature=([0-9a-f]+)", event["headers"]["Authorization"]).group(1)  # type: ignore[union-attr]


# ---------------------------------------------------------------------- signing


@pytest.mark.parametrize(
    "call",
    [
        lambda client: client.add_job({"TrainingJobName": "a", "Tags": [{"Key": "priority", "Value": "1"}]}),
        lambda client: client.list_jobs(["pending", "running"], pool="ml.g5.xlarge", owner="arn:aws:iam::1:user/a b"),
        lambda client: client.cancel_job("job-1"),
    ],
    ids=["post-with-body", "get-with-query", "delete"],
)
def test_requests_carry_a_sigv4_signature_that_verifies(front: ApiFront, stub: StubHandler, call: Any) -> None:
    stub.response = {"statusCode": 200, "body": json.dumps({"jobs": [], "next_token": None, "name": "a"})}
    session = alice()

    call(SmqApiClient(front.url, boto_session=session))

    event = stub.events[0]
    authorization = event["headers"]["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDALICE/")
    assert "/eu-west-1/execute-api/aws4_request" in authorization
    assert event["headers"]["X-Amz-Security-Token"] == "alice-token"
    assert signature_of(event) == resign(event, session.get_credentials().get_frozen_credentials(), "eu-west-1")


def test_a_tampered_request_no_longer_verifies(front: ApiFront, stub: StubHandler) -> None:
    session = alice()
    SmqApiClient(front.url, boto_session=session).update_priority("job-1", 5)
    event = dict(stub.events[0])

    event["body"] = json.dumps({"priority": 500})

    assert signature_of(event) != resign(event, session.get_credentials().get_frozen_credentials(), "eu-west-1")


def test_without_credentials_the_request_goes_unsigned(
    front: ApiFront, stub: StubHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = boto3.Session(region_name="us-east-1")
    monkeypatch.setattr(session, "get_credentials", lambda: None)

    SmqApiClient(front.url, boto_session=session).list_pools()

    assert "Authorization" not in stub.events[0]["headers"]
    assert stub.events[0]["requestContext"]["identity"]["userArn"] == "local-anonymous"


def test_the_region_comes_from_the_argument_then_the_session_then_the_url() -> None:
    assert SmqApiClient(STACK_URL, region="ap-south-1", boto_session=alice()).region == "ap-south-1"
    assert SmqApiClient(STACK_URL, boto_session=alice()).region == "eu-west-1"
    assert region_of(STACK_URL) == "eu-west-1"
    assert region_of("http://127.0.0.1:8787/prod") is None


# ---------------------------------------------------------------------- discovery


def test_an_explicit_url_wins_over_the_environment() -> None:
    env = {"SMQ_API_URL": "http://127.0.0.1:1/prod", "SMQ_STACK_NAME": "smq"}

    assert discover_api_url("http://127.0.0.1:2/prod/", env=env) == "http://127.0.0.1:2/prod"
    assert discover_api_url(env=env) == "http://127.0.0.1:1/prod"


def test_without_url_or_stack_the_error_says_how_to_give_one() -> None:
    with pytest.raises(ApiUrlNotFound) as raised:
        discover_api_url(env={})

    assert "--api-url" in str(raised.value) and "SMQ_API_URL" in str(raised.value)


@pytest.fixture
def cloudformation() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("cloudformation", region_name="us-east-1")
        template = {
            "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {"ApiUrl": {"Value": STACK_URL + "/"}, "TableName": {"Value": "smq-queue"}},
        }
        client.create_stack(StackName="smq", TemplateBody=json.dumps(template))
        client.create_stack(
            StackName="not-smq", TemplateBody=json.dumps({"Resources": template["Resources"], "Outputs": {}})
        )
        yield client


def test_the_url_is_the_stacks_api_url_output(cloudformation: Any) -> None:
    session = boto3.Session(region_name="us-east-1")

    assert discover_api_url(stack_name="smq", boto_session=session, env={}) == STACK_URL
    assert discover_api_url(boto_session=session, env={"SMQ_STACK_NAME": "smq"}) == STACK_URL


@pytest.mark.parametrize(("stack", "says"), [("not-smq", "no 'ApiUrl' output"), ("missing", "does not exist")])
def test_a_stack_without_the_output_is_a_clear_error(cloudformation: Any, stack: str, says: str) -> None:
    with pytest.raises(ApiUrlNotFound, match=says):
        discover_api_url(stack_name=stack, boto_session=boto3.Session(region_name="us-east-1"), env={})


# ---------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, InvalidRequest),
        (403, AccessDenied),
        (404, JobNotFound),
        (409, JobConflict),
        (413, PayloadTooLarge),
        (429, SmqApiError),
        (500, SmqApiError),
    ],
)
def test_error_answers_become_typed_errors_with_the_apis_words(
    front: ApiFront, stub: StubHandler, status: int, error: type[SmqApiError]
) -> None:
    stub.response = {"statusCode": status, "body": json.dumps({"message": "the rule", "field": "ResourceConfig"})}

    with pytest.raises(SmqApiError) as raised:
        SmqApiClient(front.url, max_retries=0).get_job("job-1")

    assert type(raised.value) is error
    assert (raised.value.status, raised.value.message, raised.value.field) == (status, "the rule", "ResourceConfig")
    assert str(raised.value) == "the rule (field: ResourceConfig)"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            json.dumps({"Message": "User: arn:aws:iam::1:user/x is not authorized"}),
            "User: arn:aws:iam::1:user/x is not authorized",
        ),
        ("<html>Forbidden</html>", "<html>Forbidden</html>"),
        ("", "HTTP 403 Forbidden"),
    ],
)
def test_api_gateways_own_refusals_keep_their_message(
    front: ApiFront, stub: StubHandler, body: str, message: str
) -> None:
    stub.response = {"statusCode": 403, "headers": {"Content-Type": "text/html"}, "body": body}

    with pytest.raises(AccessDenied) as raised:
        SmqApiClient(front.url).list_pools()

    assert raised.value.message == message
    assert raised.value.field is None


def test_pages_are_followed_in_order(front: ApiFront, stub: StubHandler) -> None:
    pages = iter(
        [
            {"jobs": [{"name": "a"}, {"name": "b"}], "next_token": "t1"},
            {"jobs": [{"name": "c"}], "next_token": None},
        ]
    )

    def answer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        stub.events.append(event)
        return {"statusCode": 200, "body": json.dumps(next(pages))}

    with ApiFront(answer) as paging:
        jobs = SmqApiClient(paging.url).list_jobs("all")

    assert [job["name"] for job in jobs] == ["a", "b", "c"]
    assert stub.events[0]["queryStringParameters"] == {"state": "all"}
    assert stub.events[1]["queryStringParameters"] == {"state": "all", "next_token": "t1"}


def test_attempts_are_gathered_from_every_page_in_order_of_start(front: ApiFront, stub: StubHandler) -> None:
    """Each page is in order of start, not the pages together; an attempt a changing queue moved
    from one page to the next is kept once."""

    def row(name: str, number: int, started_at: str) -> dict[str, Any]:
        return {"name": name, "job_id": f"id-{name}", "number": number, "started_at": started_at}

    late, early, again = (
        row("b", 1, "2026-11-26T09:30:00.000Z"),
        row("a", 1, "2026-11-26T09:00:00.000Z"),
        row("a", 2, "2026-11-26T09:45:00.000Z"),
    )
    pages = iter(
        [
            {"attempts": [late, again], "from": "2026-11-26T08:00:00.000Z", "to": None, "next_token": "t1"},
            {"attempts": [early, again], "from": "2026-11-26T08:00:00.000Z", "to": None, "next_token": None},
        ]
    )

    def answer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        stub.events.append(event)
        return {"statusCode": 200, "body": json.dumps(next(pages))}

    with ApiFront(answer) as paging:
        timeline = SmqApiClient(paging.url).list_attempts("2026-11-26T08:00:00Z")

    assert timeline == {"attempts": [early, late, again], "from": "2026-11-26T08:00:00.000Z", "to": None}
    assert stub.events[0]["queryStringParameters"] == {"from": "2026-11-26T08:00:00Z"}
    assert stub.events[1]["queryStringParameters"] == {"from": "2026-11-26T08:00:00Z", "next_token": "t1"}


def test_an_unreachable_api_is_one_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    with pytest.raises(ApiUnreachable) as raised:
        SmqApiClient(f"http://127.0.0.1:{port}/prod", max_retries=0).list_pools()

    assert str(raised.value) == f"cannot reach the smq API at http://127.0.0.1:{port}/prod: Connection refused"
