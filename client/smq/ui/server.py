"""`smq ui`: the queue in a browser, served from 127.0.0.1 and forwarded to the smq API signed with the
user's own credentials (the way `kubectl proxy` forwards to Kubernetes).

The pages (static/, shipped in the wheel) call `/api/...` here; each call becomes one call of
`SmqApiClient`, so the API's own ownership and access rules decide every action, and the server adds
no way into AWS the user did not already have. Log lines come from CloudWatch Logs the same way.

What a local server that holds credentials must refuse, checked before anything else:

- another `Host` than this server's own address (a DNS-rebinding page would send its own name);
- a state-changing request (PATCH, DELETE) without this session's token in `X-SMQ-Token`, or whose
  `Origin` is not this server: another site's page can send such requests but cannot read the
  token, which only the page served here holds.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import botocore.exceptions

from smq.api_client import SmqApiClient
from smq.errors import SmqApiError, SmqError
from smq.ui.log_lines import attempt_log_lines

LOOPBACK = "127.0.0.1"
TOKEN_HEADER = "X-SMQ-Token"
STATE_CHANGING = frozenset({"PATCH", "DELETE", "POST", "PUT"})
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript"}
TOKEN_PLACEHOLDER = "{{SMQ_TOKEN}}"
MAX_BODY_BYTES = 4096
"""The only body a page sends is `{"priority": n}`."""
SHUTDOWN_POLL_SECONDS = 0.05
"""How often a started server checks for shutdown: stopping it (or a test) waits at most this long."""
_JOB_PATH = re.compile(r"^/api/jobs/([^/]+)$")
_LOGS_PATH = re.compile(r"^/api/logs/([^/]+)$")
_STATIC_PATH = re.compile(r"^/static/([a-z0-9-]+\.(?:css|js))$")


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    content_type: str = "application/json"


class UiGuard:
    """The checks of one session: its token and the origins its pages have."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        self.hosts = frozenset({f"{LOOPBACK}:{port}", f"localhost:{port}"})

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)

    def refusal(self, method: str, headers: Mapping[str, str]) -> str | None:
        """Why the request must be refused, or None. `headers` keys are lower-case."""
        if headers.get("host") not in self.hosts:
            return "unknown Host: open the ui at the address `smq ui` printed"
        if method not in STATE_CHANGING:
            return None
        if headers.get("origin") not in self.origins:
            return "cross-origin request refused (Origin is not this ui)"
        sent = headers.get(TOKEN_HEADER.lower(), "")
        if not hmac.compare_digest(sent.encode(), self.token.encode()):
            return f"missing or wrong {TOKEN_HEADER}: reload the page"
        return None


class UiApp:
    """What each `/api/...` path does, over one API client (and a CloudWatch Logs client, if any)."""

    def __init__(self, client: SmqApiClient, logs: Any | None, guard: UiGuard) -> None:
        self._client = client
        self._logs = logs
        self._guard = guard

    def answer(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Answer:
        refusal = self._guard.refusal(method, headers)
        if refusal is not None:
            return Answer(HTTPStatus.FORBIDDEN, {"message": refusal, "field": None})
        split = urlsplit(target)
        query = {key: values[-1] for key, values in parse_qs(split.query).items()}
        try:
            return self._route(method, split.path, query, body)
        except SmqApiError as exc:
            return Answer(exc.status, {"message": exc.message, "field": exc.field})
        except (SmqError, botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
            return Answer(HTTPStatus.BAD_GATEWAY, {"message": str(exc), "field": None})

    def _route(self, method: str, path: str, query: Mapping[str, str], body: bytes) -> Answer:
        if method == "GET" and path in ("/", "/index.html"):
            page = _static("index.html").replace(TOKEN_PLACEHOLDER, self._guard.token)
            return Answer(HTTPStatus.OK, page, STATIC_TYPES[".html"])
        if method == "GET" and (static := _STATIC_PATH.match(path)) and _STATIC.joinpath(static.group(1)).is_file():
            name = static.group(1)
            return Answer(HTTPStatus.OK, _static(name), STATIC_TYPES[name[name.rindex(".") :]])
        if method == "GET" and path == "/api/jobs":
            jobs = self._client.list_jobs(query.get("state") or None, pool=query.get("pool"), owner=query.get("owner"))
            return Answer(HTTPStatus.OK, {"jobs": jobs})
        if method == "GET" and path == "/api/pools":
            return Answer(HTTPStatus.OK, {"pools": self._client.list_pools()})
        if method == "GET" and path == "/api/quotas":
            return Answer(HTTPStatus.OK, self._client.get_quotas())
        if method == "GET" and path == "/api/attempts":
            return Answer(HTTPStatus.OK, self._client.list_attempts(query.get("from", ""), query.get("to")))
        if method == "GET" and (logs := _LOGS_PATH.match(path)):
            if self._logs is None:
                return Answer(HTTPStatus.OK, {"lines": [], "note": "no CloudWatch Logs client"})
            return Answer(HTTPStatus.OK, {"lines": attempt_log_lines(self._logs, unquote(logs.group(1)))})
        if job := _JOB_PATH.match(path):
            return self._job(method, unquote(job.group(1)), query, body)
        return Answer(HTTPStatus.NOT_FOUND, {"message": f"no such page: {method} {path}", "field": None})

    def _job(self, method: str, name: str, query: Mapping[str, str], body: bytes) -> Answer:
        if method == "GET":
            return Answer(HTTPStatus.OK, self._client.get_job(name, include_request=query.get("include") == "request"))
        if method == "DELETE":
            return Answer(HTTPStatus.ACCEPTED, self._client.cancel_job(name))
        if method == "PATCH":
            priority = _priority(body)
            if priority is None:
                return Answer(HTTPStatus.BAD_REQUEST, {"message": 'send {"priority": <integer>}', "field": "priority"})
            return Answer(HTTPStatus.OK, self._client.update_priority(name, priority))
        return Answer(HTTPStatus.METHOD_NOT_ALLOWED, {"message": f"{method} is not allowed here", "field": None})


class UiServer:
    """`UiServer(client).start()`; `url` is the address to open. Always bound to 127.0.0.1."""

    def __init__(self, client: SmqApiClient, *, logs: Any | None = None, port: int = 0) -> None:
        self._http = ThreadingHTTPServer((LOOPBACK, port), _RequestHandler)
        self._http.daemon_threads = True
        self.guard = UiGuard(self._http.server_address[1])
        self._http.app = UiApp(client, logs, self.guard)  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.guard.port}/"

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._http.server_address[:2]
        return str(host), int(port)

    def start(self) -> UiServer:
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS}, name="smq-ui", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._http.serve_forever()

    def shutdown(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> UiServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()


class _RequestHandler(BaseHTTPRequestHandler):
    server_version = "smq-ui"

    def do_GET(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal running `smq ui` shows only its address and errors."""

    def _serve(self) -> None:
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY_BYTES)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = self.server.app.answer(self.command, self.path, headers, body)  # type: ignore[attr-defined]
        data = answer.body.encode() if isinstance(answer.body, str) else json.dumps(answer.body).encode()
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header(
            "Content-Security-Policy",
            "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'",
        )
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the page went away meanwhile
            self.wfile.write(data)


_STATIC = resources.files("smq.ui").joinpath("static")


def _static(name: str) -> str:
    return _STATIC.joinpath(name).read_text(encoding="utf-8")


def _priority(body: bytes) -> int | None:
    try:
        value = json.loads(body or b"null")
    except ValueError:
        return None
    priority = value.get("priority") if isinstance(value, dict) else None
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else None
