"""The HTTP front: SageMaker's JSON 1.1 protocol, plus the `/_smq/inject` fault endpoint.

AWS calls are `POST /` with `X-Amz-Target: SageMaker.<Operation>` and a JSON body; errors are
HTTP 400 with `{"__type": code, "Message": text}`, which botocore parses into ClientError
codes. Signatures are not checked: the local stack has no secrets to protect.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from smq.local.sagemaker.errors import ApiError, SerializationError, UnknownOperation

INJECT_PATH = "/_smq/inject"
TARGET_PREFIX = "SageMaker."
CONTENT_TYPE = "application/x-amz-json-1.1"

Operation = Callable[[Mapping[str, Any]], dict[str, Any]]
logger = logging.getLogger(__name__)


class SageMakerHttpServer(ThreadingHTTPServer):
    """Binds on construction, so the port is known before serving starts."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        operations: Mapping[str, Operation],
        inject: Callable[[str, str, str | None], None],
    ) -> None:
        super().__init__(address, _Handler)
        self.operations = operations
        self.inject = inject


class _Handler(BaseHTTPRequestHandler):
    server: SageMakerHttpServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            params = _json_object(body)
            if self.path == INJECT_PATH:
                reason = params.get("reason")
                self.server.inject(
                    str(params.get("job", "")), str(params.get("fault", "")), None if reason is None else str(reason)
                )
                self._reply(200, {})
                return
            target = self.headers.get("X-Amz-Target", "")
            operation = self.server.operations.get(target.removeprefix(TARGET_PREFIX))
            if not target.startswith(TARGET_PREFIX) or operation is None:
                raise UnknownOperation(
                    f"Operation {target or '(none)'} is not supported by the local SageMaker service."
                )
            self._reply(200, operation(params))
        except ApiError as error:
            self._reply(error.status, {"__type": error.code, "Message": error.message}, error_type=error.code)
        except Exception:  # a 500 carries no internals; the log has them
            logger.exception("local SageMaker request failed")
            self._reply(
                500, {"__type": "InternalFailure", "Message": "The local SageMaker service failed; see its log."}
            )

    def _reply(self, status: int, payload: dict[str, Any], error_type: str | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        if error_type:
            self.send_header("x-amzn-ErrorType", error_type)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        params = json.loads(body or b"{}")
    except ValueError as exc:
        raise SerializationError("The request body is not valid JSON.") from exc
    if not isinstance(params, dict):
        raise SerializationError("The request body must be a JSON object.")
    return params


class FaultRejected(Exception):
    """The service refused an injection (unknown job, wrong state, unknown fault)."""


def request_fault(endpoint_url: str, job: str, fault: str, reason: str | None = None, timeout: float = 10.0) -> None:
    """Inject `fault` into training job `job` of the local service at `endpoint_url`; `reason`
    is the FailureReason of a `fail`.

    For `smq local inject`, which runs in another process than the stack.
    """
    body: dict[str, str] = {"job": job, "fault": fault}
    if reason is not None:
        body["reason"] = reason
    request = urllib.request.Request(
        endpoint_url.rstrip("/") + INJECT_PATH,
        method="POST",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return
    except urllib.error.HTTPError as error:
        try:
            message = json.loads(error.read()).get("Message", str(error))
        except ValueError:
            message = str(error)
        raise FaultRejected(message) from error
