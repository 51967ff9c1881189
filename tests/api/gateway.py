"""Calls the API handler the way API Gateway does, and checks every exchange against openapi.yaml.

Events are built from the real-shaped REST proxy fixtures in tests/events/. After each call:

- the response must validate against the operation's documented responses (status and body);
- a request the OpenAPI document rejects must get a 4xx (the handler never accepts what the
  document forbids);
- a request for a route the document lacks fails the test, unless the caller says it is probing
  unknown routes (then the handler must answer 404).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast

from aws_lambda_powertools.utilities.typing import LambdaContext
from openapi_core import OpenAPI
from openapi_core.exceptions import OpenAPIError
from openapi_core.templating.paths.exceptions import PathError
from openapi_core.testing import MockRequest, MockResponse
from smq.local.lambda_context import LambdaContext as LocalLambdaContext

from tests.api.builders import ALICE

REPO_ROOT = Path(__file__).resolve().parents[2]
EVENTS = REPO_ROOT / "tests" / "events"
SPEC = REPO_ROOT / "openapi.yaml"

_FIXTURES = {
    ("POST", "/add-job"): "add_job.json",
    ("GET", "/jobs"): "list_jobs.json",
    ("GET", "/jobs/{name}"): "get_job.json",
    ("PATCH", "/jobs/{name}"): "change_priority.json",
    ("DELETE", "/jobs/{name}"): "cancel_job.json",
    ("GET", "/pools"): "list_pools.json",
    ("GET", "/quotas"): "list_pools.json",
    ("GET", "/attempts"): "list_pools.json",
}

LAMBDA_CONTEXT = cast(LambdaContext, LocalLambdaContext(function_name="smq-api", timeout_seconds=3600))
"""What powertools' Logger and Idempotency read from the Lambda context."""

NO_BODY = object()


@cache
def spec() -> OpenAPI:
    return OpenAPI.from_file_path(str(SPEC))


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


def _resource(path: str) -> str:
    if path.startswith("/jobs/") and path.count("/") == 2:
        return "/jobs/{name}"
    return path


def api_event(
    method: str,
    path: str,
    *,
    body: str | None = None,
    query: dict[str, str] | None = None,
    caller: str | None = ALICE,
    is_base64: bool = False,
) -> dict[str, Any]:
    """A REST proxy event for `method path`, from the fixture of that route (GET /jobs/{name} for
    routes the API does not have)."""
    resource = _resource(path)
    event = copy.deepcopy(load_event(_FIXTURES.get((method, resource), "get_job.json")))
    event["httpMethod"] = method
    event["path"] = path
    event["resource"] = resource
    event["pathParameters"] = {"name": path.split("/", 2)[2]} if resource == "/jobs/{name}" else None
    event["queryStringParameters"] = query or None
    event["multiValueQueryStringParameters"] = {key: [value] for key, value in query.items()} if query else None
    event["body"] = body
    event["isBase64Encoded"] = is_base64
    context = event["requestContext"]
    context.update(httpMethod=method, resourcePath=resource, path=f"/{context['stage']}{path}")
    context["identity"]["userArn"] = caller
    headers = event["headers"]
    if body is None:
        headers.pop("Content-Type", None)
        headers.pop("Content-Length", None)
    else:
        headers["Content-Type"] = "application/json"
        headers["Content-Length"] = str(len(body.encode("utf-8", "surrogatepass")))
    event["multiValueHeaders"] = {key: [value] for key, value in headers.items()}
    return event


@dataclass
class Reply:
    status: int
    body: Any
    request_valid: bool
    """Whether openapi.yaml accepts the request that produced this reply."""
    headers: dict[str, str] = field(default_factory=dict)
    """The response's headers (the first value of each)."""

    @property
    def field(self) -> str | None:
        return self.body["field"]


def check_exchange(event: dict[str, Any], response: dict[str, Any], *, unknown_route_ok: bool = False) -> bool:
    """Validate one request/response pair against openapi.yaml; returns whether the request is valid."""
    raw = event.get("body")
    data = b"" if raw is None else raw.encode("utf-8", "surrogatepass")
    if raw is not None and event["isBase64Encoded"]:
        with contextlib.suppress(binascii.Error):  # the handler must refuse it; the document sees the text as sent
            data = base64.b64decode(raw, validate=True)
    if unknown_route_ok and "//" in event["path"]:
        # openapi-core matches `//pools` to `/pools`; no resource of the API has an empty segment.
        assert response["statusCode"] == 404, response
        return False
    context = event["requestContext"]
    request = MockRequest(
        host_url=f"https://{context['domainName']}",
        method=event["httpMethod"],
        # Relative to the stage, as the document's paths are; API Gateway treats `/jobs/` as `/jobs`.
        path=event["path"].rstrip("/") or "/",
        args=event.get("queryStringParameters") or {},
        headers=event["headers"],
        data=data,
        content_type=event["headers"].get("Content-Type", "application/json"),
    )
    try:
        spec().validate_request(request)
        request_valid = True
    except PathError as exc:
        if not unknown_route_ok:
            raise AssertionError(f"openapi.yaml has no {event['httpMethod']} {event['path']}: {exc}") from exc
        assert response["statusCode"] == 404, response
        return False
    except (OpenAPIError, RecursionError):
        request_valid = False
    content_type = response["multiValueHeaders"]["Content-Type"][0]
    spec().validate_response(
        request,
        MockResponse(data=response["body"].encode(), status_code=response["statusCode"], content_type=content_type),
    )
    if not request_valid:
        assert 400 <= response["statusCode"] < 500, f"accepted a request openapi.yaml rejects: {response}"
    return request_valid


class ApiGateway:
    """A client of the handler: builds the event, calls the handler, checks the exchange."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = NO_BODY,
        body: str | None = None,
        query: dict[str, str] | None = None,
        caller: str | None = ALICE,
        is_base64: bool = False,
        unknown_route_ok: bool = False,
    ) -> Reply:
        if json_body is not NO_BODY:
            body = json.dumps(json_body)
        event = api_event(method, path, body=body, query=query, caller=caller, is_base64=is_base64)
        response = self.handler(event, LAMBDA_CONTEXT)
        valid = check_exchange(event, response, unknown_route_ok=unknown_route_ok)
        headers = {name: values[0] for name, values in (response.get("multiValueHeaders") or {}).items() if values}
        return Reply(
            status=response["statusCode"], body=json.loads(response["body"]), request_valid=valid, headers=headers
        )

    def add(self, request: Any, *, caller: str = ALICE) -> Reply:
        return self.request("POST", "/add-job", json_body=request, caller=caller)

    def get(self, name: str, *, caller: str = ALICE) -> Reply:
        return self.request("GET", f"/jobs/{name}", caller=caller)

    def list_jobs(self, *, caller: str = ALICE, **query: str) -> Reply:
        return self.request("GET", "/jobs", query=query, caller=caller)

    def set_priority(self, name: str, priority: Any, *, caller: str = ALICE) -> Reply:
        return self.request("PATCH", f"/jobs/{name}", json_body={"priority": priority}, caller=caller)

    def cancel(self, name: str, *, caller: str = ALICE) -> Reply:
        return self.request("DELETE", f"/jobs/{name}", caller=caller)

    def pools(self, *, caller: str = ALICE) -> Reply:
        return self.request("GET", "/pools", caller=caller)

    def quotas(self, *, caller: str = ALICE) -> Reply:
        return self.request("GET", "/quotas", caller=caller)
