"""The local stand-in for API Gateway: HTTP in, REST proxy events to the API handler, HTTP out.

Each request becomes the event API Gateway's Lambda proxy integration would send, so the handler
under test is the one Lambda runs. The caller's identity comes from the SigV4 `Authorization`
header's access key: the IAM user the stack made that key for (`arn:aws:iam::000000000000:user/
smq-local-admin`, as API Gateway names an IAM user), or for any other key `user/<key id>`. The
signature is not checked, the point is telling owners apart. Unsigned requests are `local-anonymous`.

Like API Gateway, a path or method the API does not define is answered 403 "Missing Authentication
Token" without calling the handler, and a handler that raises is a 502.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from smq.local.lambda_context import LambdaContext

log = logging.getLogger("smq.local.api")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

STAGE = "prod"
ACCOUNT = "000000000000"
ANONYMOUS = "local-anonymous"
FUNCTION_NAME = "smq-api"
SHUTDOWN_POLL_SECONDS = 0.05
"""How often the server checks for shutdown: stopping a stack (or a test) waits at most this long."""
ROUTES: dict[str, frozenset[str]] = {
    "/add-job": frozenset({"POST"}),
    "/jobs": frozenset({"GET"}),
    "/jobs/{name}": frozenset({"GET", "PATCH", "DELETE"}),
    "/pools": frozenset({"GET"}),
    "/quotas": frozenset({"GET"}),
    "/attempts": frozenset({"GET"}),
    "/costs": frozenset({"GET"}),
}
"""Resources and methods of openapi.yaml (a test keeps the two equal)."""

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")


def access_key_of(authorization: str | None) -> str | None:
    """The access key id in a SigV4 `Authorization` header, or None when there is none."""
    if not authorization or not authorization.startswith("AWS4-HMAC-SHA256"):
        return None
    match = _CREDENTIAL.search(authorization)
    return match.group(1) if match else None


def match_resource(path: str) -> tuple[str, dict[str, str]] | None:
    """The API resource a path belongs to, with its path parameters (decoded as API Gateway does)."""
    if path in ROUTES and "{" not in path:
        return path, {}
    parts = path.split("/")
    if len(parts) == 3 and parts[1] == "jobs" and parts[2]:
        return "/jobs/{name}", {"name": unquote(parts[2])}
    return None


class ApiFront:
    """`ApiFront(handler).start()`; `url` is the base URL clients use (it ends with the stage)."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1", port: int = 0) -> None:
        self._handler = handler
        self._host = host
        self.users: dict[str, str] = {}
        """Access key id → the IAM user it belongs to (the stack names its admin's once made)."""
        self._lock = threading.Lock()
        """The handler keeps per-cold-start state; one call at a time, like one Lambda instance."""
        self._server = ThreadingHTTPServer((host, port), self._request_handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._server.server_port}/{STAGE}"

    def start(self) -> ApiFront:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
            name="smq-api-front",
            daemon=True,
        )
        self._thread.start()
        return self

    def shutdown(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ApiFront:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    # ------------------------------------------------------------------ one request

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        """Call the handler as Lambda would; any failure is API Gateway's 502."""
        context = LambdaContext.for_function(FUNCTION_NAME)
        try:
            with self._lock:
                result = self._handler(event, context)
            if not isinstance(result, dict) or not isinstance(result.get("statusCode"), int):
                raise TypeError(f"the handler returned {type(result).__name__}, not a proxy response")
            return result
        except Exception:
            log.exception("the API handler failed on %s %s", event["httpMethod"], event["path"])
            return {"statusCode": 502, "body": json.dumps({"message": "Internal server error"})}

    def _request_handler_class(self) -> type[BaseHTTPRequestHandler]:
        front = self

        class _Request(BaseHTTPRequestHandler):
            server_version = "smq-local-api"

            def do_GET(self) -> None:
                front._serve(self)

            do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = do_OPTIONS = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("%s - %s", self.address_string(), format % args)

        return _Request

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        split = urlsplit(request.path)
        prefix = f"/{STAGE}"
        path = split.path[len(prefix) :] if split.path.startswith(prefix + "/") else None
        matched = match_resource(path) if path is not None else None
        if matched is None or request.command not in ROUTES[matched[0]]:
            response: dict[str, Any] = {
                "statusCode": HTTPStatus.FORBIDDEN,
                "body": json.dumps({"message": "Missing Authentication Token"}),
            }
        else:
            resource, path_parameters = matched
            event = proxy_event(
                method=request.command,
                path=str(path),
                resource=resource,
                path_parameters=path_parameters,
                query=split.query,
                headers=request.headers.items(),
                body=body,
                source_ip=request.client_address[0],
                users=self.users,
            )
            response = self.invoke(event)
        _write(request, response)


def proxy_event(
    *,
    method: str,
    path: str,
    resource: str,
    path_parameters: dict[str, str],
    query: str,
    headers: Any,
    body: bytes,
    source_ip: str,
    users: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway REST API (v1) Lambda proxy event, as AWS documents it."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in headers:
        single[name] = value
        multi.setdefault(name, []).append(value)
    query_single: dict[str, str] = {}
    query_multi: dict[str, list[str]] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        query_single[name] = value
        query_multi.setdefault(name, []).append(value)
    lowered = {name.lower(): value for name, value in single.items()}
    access_key = access_key_of(lowered.get("authorization"))
    user = (users or {}).get(access_key, access_key) if access_key else None
    user_arn = f"arn:aws:iam::{ACCOUNT}:user/{user}" if user else ANONYMOUS
    try:
        text: str | None = body.decode("utf-8") if body else None
        encoded = False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    now = datetime.now(UTC)
    request_id = str(uuid.uuid4())
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": single or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": query_single or None,
        "multiValueQueryStringParameters": query_multi or None,
        "pathParameters": path_parameters or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": "local",
            "resourceId": resource,
            "resourcePath": resource,
            "httpMethod": method,
            "path": f"/{STAGE}{path}",
            "stage": STAGE,
            "protocol": "HTTP/1.1",
            "domainName": lowered.get("host", "127.0.0.1"),
            "requestId": request_id,
            "extendedRequestId": request_id,
            "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {
                "accessKey": access_key,
                "accountId": ACCOUNT if access_key else None,
                "caller": access_key or ANONYMOUS,
                "user": access_key or ANONYMOUS,
                "userArn": user_arn,
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent"),
                "cognitoAuthenticationProvider": None,
                "cognitoAuthenticationType": None,
                "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None,
                "principalOrgId": None,
            },
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


def _write(request: BaseHTTPRequestHandler, response: dict[str, Any]) -> None:
    body = response.get("body") or ""
    payload = base64.b64decode(body) if response.get("isBase64Encoded") else str(body).encode("utf-8")
    headers: dict[str, list[str]] = {name: [str(value)] for name, value in (response.get("headers") or {}).items()}
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers[name] = [str(value) for value in values]
    lowered = {name.lower() for name in headers}
    request.send_response(int(response["statusCode"]))
    if "content-type" not in lowered:
        request.send_header("Content-Type", "application/json")
    for name, values in headers.items():
        if name.lower() in {"content-length", "connection"}:
            continue
        for value in values:
            request.send_header(name, value)
    request.send_header("Content-Length", str(len(payload)))
    request.end_headers()
    if request.command != "HEAD":
        request.wfile.write(payload)
