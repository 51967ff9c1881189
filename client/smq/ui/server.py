"""`smq ui`: the queue in a browser, served from 127.0.0.1 and forwarded to the smq API signed with the
user's own credentials (the way `kubectl proxy` forwards to Kubernetes).

The pages (static/, shipped in the wheel) call `/api/...` here; each call becomes one call of
`SmqApiClient`, so the API's own ownership and access rules decide every action, and the server adds
no way into AWS the user did not already have. Log lines come from CloudWatch Logs the same way.

What a local server that holds credentials must refuse, checked before anything else:

- another `Host` than this server's own address (a DNS-rebinding page would send its own name);
- any request without this session's cookie, except the address `smq ui` printed: another user on
  the same host can reach 127.0.0.1 too, but cannot read the token in that address (as Jupyter's).
  Opening it sets the cookie (HttpOnly, SameSite=Strict) and redirects to the page without it;
- a state-changing request (PATCH, DELETE) without the page's action token in `X-SMQ-Token`, or
  whose `Origin` is not this server: another site's page can send such requests but cannot read
  that token, which only the page served here holds (cookies do not tell one port from another, so
  the cookie alone would let a page on another 127.0.0.1 port act).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import re
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, parse_qsl, unquote, urlencode, urlsplit

import botocore.exceptions

from smq.api_client import SmqApiClient
from smq.errors import SmqApiError, SmqError
from smq.ui.log_lines import attempt_log_lines

LOOPBACK = "127.0.0.1"
TOKEN_HEADER = "X-SMQ-Token"
STATE_CHANGING = frozenset({"PATCH", "DELETE", "POST", "PUT"})
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript"}
TOKEN_PLACEHOLDER = "{{SMQ_TOKEN}}"
URL_TOKEN = "token"
"""The query parameter of the printed address that signs a browser in."""
PAGE_PATHS = frozenset({"/", "/index.html"})
PLAIN_TEXT = "text/plain; charset=utf-8"
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
    headers: Sequence[tuple[str, str]] = ()


class UiGuard:
    """The checks of one session: its tokens and the origins its pages have.

    `token` is the session's: in the printed address, then in an HttpOnly cookie, never in a page.
    `action_token` is the one the page holds and sends with each action.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.token = secrets.token_urlsafe(32)
        self.action_token = secrets.token_urlsafe(32)
        self.hosts = frozenset({f"{LOOPBACK}:{port}", f"localhost:{port}"})
        self.cookie_name = f"smq-ui-{port}"
        """Named after the port: a browser sends every 127.0.0.1 port the same cookies."""

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)

    @property
    def sign_in_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/?{URL_TOKEN}={self.token}"

    def is_token(self, sent: str) -> bool:
        return hmac.compare_digest(sent.encode(), self.token.encode())

    def host_refusal(self, headers: Mapping[str, str]) -> str | None:
        """Why a request naming another Host must be refused, or None. `headers` keys are lower-case."""
        if headers.get("host") not in self.hosts:
            return "unknown Host: open the ui at the address `smq ui` printed"
        return None

    def signed_in(self, headers: Mapping[str, str]) -> bool:
        """Whether the request carries this session's cookie."""
        for pair in headers.get("cookie", "").split(";"):
            name, _, value = pair.strip().partition("=")
            if name == self.cookie_name and self.is_token(value):
                return True
        return False

    def sign_in_cookie(self) -> str:
        return f"{self.cookie_name}={self.token}; HttpOnly; SameSite=Strict; Path=/"

    def action_refusal(self, method: str, headers: Mapping[str, str]) -> str | None:
        """Why a state-changing request must be refused, or None."""
        if method not in STATE_CHANGING:
            return None
        if headers.get("origin") not in self.origins:
            return "cross-origin request refused (Origin is not this ui)"
        sent = headers.get(TOKEN_HEADER.lower(), "")
        if not hmac.compare_digest(sent.encode(), self.action_token.encode()):
            return f"missing or wrong {TOKEN_HEADER}: reload the page"
        return None

    def not_signed_in(self, path: str) -> Answer:
        """403 saying how to get in; JSON for the page's own calls, which show its `message`."""
        message = (
            f"not signed in to this smq ui: open the address `smq ui` printed in its terminal "
            f"(http://{LOOPBACK}:{self.port}/?{URL_TOKEN}=...)"
        )
        if path.startswith("/api/"):
            return Answer(HTTPStatus.FORBIDDEN, {"message": message, "field": None})
        return Answer(HTTPStatus.FORBIDDEN, message + "\n", PLAIN_TEXT)


class UiApp:
    """What each `/api/...` path does, over one API client (and a CloudWatch Logs client, if any)."""

    def __init__(self, client: SmqApiClient, logs: Any | None, guard: UiGuard) -> None:
        self._client = client
        self._logs = logs
        self._guard = guard

    def answer(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Answer:
        wrong_host = self._guard.host_refusal(headers)
        if wrong_host is not None:
            return Answer(HTTPStatus.FORBIDDEN, {"message": wrong_host, "field": None})
        split = urlsplit(target)
        sent_token = parse_qs(split.query, keep_blank_values=True).get(URL_TOKEN)
        if method == "GET" and split.path in PAGE_PATHS and sent_token:
            return self._sign_in(split.path, split.query, sent_token[-1])
        if not self._guard.signed_in(headers):
            return self._guard.not_signed_in(split.path)
        refusal = self._guard.action_refusal(method, headers)
        if refusal is not None:
            return Answer(HTTPStatus.FORBIDDEN, {"message": refusal, "field": None})
        query = {key: values[-1] for key, values in parse_qs(split.query).items()}
        try:
            return self._route(method, split.path, query, body)
        except SmqApiError as exc:
            return Answer(exc.status, {"message": exc.message, "field": exc.field})
        except (SmqError, botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
            return Answer(HTTPStatus.BAD_GATEWAY, {"message": str(exc), "field": None})

    def _sign_in(self, path: str, raw_query: str, sent: str) -> Answer:
        """The printed address: set the cookie and send the browser on to the page without the token,
        so that the token stays out of the address bar and of what the page can read."""
        if not self._guard.is_token(sent):
            return self._guard.not_signed_in(path)
        rest = urlencode(
            [(key, value) for key, value in parse_qsl(raw_query, keep_blank_values=True) if key != URL_TOKEN]
        )
        location = f"{path}?{rest}" if rest else path
        cookie = self._guard.sign_in_cookie()
        return Answer(HTTPStatus.SEE_OTHER, "", PLAIN_TEXT, (("Location", location), ("Set-Cookie", cookie)))

    def _route(self, method: str, path: str, query: Mapping[str, str], body: bytes) -> Answer:
        if method == "GET" and path in PAGE_PATHS:
            page = _static("index.html").replace(TOKEN_PLACEHOLDER, self._guard.action_token)
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
    """`UiServer(client).start()`; `url` is the address to open (it holds the session's token). Always
    bound to 127.0.0.1."""

    def __init__(self, client: SmqApiClient, *, logs: Any | None = None, port: int = 0) -> None:
        self._http = ThreadingHTTPServer((LOOPBACK, port), _RequestHandler)
        self._http.daemon_threads = True
        self.guard = UiGuard(self._http.server_address[1])
        self._http.app = UiApp(client, logs, self.guard)  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return self.guard.sign_in_url

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
        declared = self.headers.get("Content-Length") or "0"
        if not declared.isdigit():
            self.send_error(400, "Content-Length must be a non-negative integer")
            return
        length = min(int(declared), MAX_BODY_BYTES)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = self.server.app.answer(self.command, self.path, headers, body)  # type: ignore[attr-defined]
        data = answer.body.encode() if isinstance(answer.body, str) else json.dumps(answer.body).encode()
        self.send_response(answer.status)
        for name, value in answer.headers:
            self.send_header(name, value)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
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
