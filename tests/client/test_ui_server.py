"""`smq ui`'s local server without a browser: it listens on 127.0.0.1 only, refuses other Host
headers (DNS rebinding), lets a state-changing request through only with this session's token and
its own Origin (CSRF), and forwards each call to the API signed with the user's credentials, the
API's refusals passed back as they are."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from typing import Any

import boto3
import pytest
from smq.api_client import SmqApiClient
from smq.cli.main import main
from smq.ui.server import TOKEN_HEADER, UiGuard, UiServer

ALICE_KEY = "AKIAALICEEXAMPLE0001"


@dataclass
class Upstream:
    """A stand-in for the smq API: records each request, answers `answers[(method, path)]`."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    record = Upstream(url="")

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            path = self.path.split("?")[0].removeprefix("/prod")
            record.requests.append(
                {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
            )
            status, answer = record.answers.get((self.command, path), (200, {"name": "j", "state": "pending"}))
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PATCH = do_DELETE = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    record.url = f"http://127.0.0.1:{server.server_address[1]}/prod"
    yield record
    server.shutdown()
    server.server_close()


@pytest.fixture
def ui(upstream: Upstream) -> Iterator[UiServer]:
    session = boto3.Session(aws_access_key_id=ALICE_KEY, aws_secret_access_key="secret", region_name="us-east-1")
    client = SmqApiClient(upstream.url, boto_session=session, max_retries=0)
    with UiServer(client) as server:
        yield server


def call(
    ui: UiServer, method: str, path: str, *, headers: dict[str, str] | None = None, body: Any = None
) -> tuple[int, Any, dict[str, str]]:
    host, port = ui.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    sent = {"Host": f"127.0.0.1:{port}", **(headers or {})}
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
        sent["Content-Type"] = "application/json"
    connection.putrequest(method, path, skip_host=True)
    for name, value in sent.items():
        connection.putheader(name, value)
    if data is not None:
        connection.putheader("Content-Length", str(len(data)))
    connection.endheaders(data)
    response = connection.getresponse()
    raw = response.read().decode()
    connection.close()
    try:
        parsed: Any = json.loads(raw)
    except ValueError:
        parsed = raw
    return response.status, parsed, {name.lower(): value for name, value in response.getheaders()}


def own(ui: UiServer) -> dict[str, str]:
    """What the page served here sends with an action."""
    return {"Origin": f"http://127.0.0.1:{ui.guard.port}", TOKEN_HEADER: ui.guard.token}


def test_listens_on_the_loopback_address_only(ui: UiServer) -> None:
    assert ui.address[0] == "127.0.0.1"
    assert ui.url == f"http://127.0.0.1:{ui.guard.port}/"


def test_the_page_carries_this_sessions_token_and_forbids_other_scripts(ui: UiServer) -> None:
    status, page, headers = call(ui, "GET", "/")
    assert status == 200
    assert f'content="{ui.guard.token}"' in page
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    assert call(ui, "GET", "/static/app.js")[0] == 200
    assert call(ui, "GET", "/static/../server.py")[0] == 404
    assert call(ui, "GET", "/static/missing.js")[0] == 404


@pytest.mark.parametrize("host", ["evil.example:80", "attacker.test", "127.0.0.1", "127.0.0.1:1", ""])
def test_another_host_header_is_refused_before_anything_is_forwarded(
    ui: UiServer, upstream: Upstream, host: str
) -> None:
    status, body, _ = call(ui, "GET", "/api/jobs", headers={"Host": host})
    assert status == 403
    assert "Host" in body["message"]
    assert upstream.requests == []


def test_localhost_is_this_server_too(ui: UiServer) -> None:
    assert call(ui, "GET", "/api/pools", headers={"Host": f"localhost:{ui.guard.port}"})[0] == 200


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "Origin"),
        ({"Origin": "https://evil.example"}, "Origin"),
        ({"Origin": "null"}, "Origin"),
        ({"Origin": "OWN"}, TOKEN_HEADER),
        ({"Origin": "OWN", TOKEN_HEADER: "guessed"}, TOKEN_HEADER),
        ({"Origin": "https://evil.example", TOKEN_HEADER: "TOKEN"}, "Origin"),
    ],
)
@pytest.mark.parametrize(("method", "body"), [("DELETE", None), ("PATCH", {"priority": 5})])
def test_an_action_without_the_token_or_from_another_origin_is_refused(
    ui: UiServer, upstream: Upstream, headers: dict[str, str], why: str, method: str, body: Any
) -> None:
    own_headers = own(ui)
    sent = {
        name: own_headers["Origin"] if value == "OWN" else ui.guard.token if value == "TOKEN" else value
        for name, value in headers.items()
    }
    status, answer, _ = call(ui, method, "/api/jobs/j", headers=sent, body=body)
    assert status == 403
    assert why in answer["message"]
    assert upstream.requests == []


def test_actions_are_forwarded_signed_with_the_users_own_credentials(ui: UiServer, upstream: Upstream) -> None:
    assert call(ui, "PATCH", "/api/jobs/j", headers=own(ui), body={"priority": 7})[0] == 200
    assert call(ui, "DELETE", "/api/jobs/j", headers=own(ui))[0] == 202
    assert [(r["method"], r["path"], r["body"]) for r in upstream.requests] == [
        ("PATCH", "/prod/jobs/j", '{"priority": 7}'),
        ("DELETE", "/prod/jobs/j", ""),
    ]
    for request in upstream.requests:
        authorization = request["headers"]["Authorization"]
        assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={ALICE_KEY}/")
        assert "/us-east-1/execute-api/aws4_request" in authorization
        assert TOKEN_HEADER not in request["headers"]


def test_reads_need_no_token_and_go_to_the_api(ui: UiServer, upstream: Upstream) -> None:
    upstream.answers[("GET", "/attempts")] = (200, {"attempts": [], "from": "x", "to": None})
    status, body, _ = call(ui, "GET", "/api/attempts?from=2026-11-26T09:00:00Z")
    assert (status, body["attempts"]) == (200, [])
    assert upstream.requests[-1]["path"] == "/prod/attempts?from=2026-11-26T09%3A00%3A00Z"


def test_the_job_page_asks_for_the_request_only_when_it_wants_it(ui: UiServer, upstream: Upstream) -> None:
    request = {"TrainingJobName": "j", "HyperParameters": {"lr": "0.1"}}
    upstream.answers[("GET", "/jobs/j")] = (200, {"name": "j", "request": request})
    status, body, _ = call(ui, "GET", "/api/jobs/j?include=request")
    call(ui, "GET", "/api/jobs/j")
    assert (status, body["request"]) == (200, request)
    assert [r["path"] for r in upstream.requests] == ["/prod/jobs/j?include=request", "/prod/jobs/j"]


def test_the_apis_refusal_is_passed_back_as_it_is(ui: UiServer, upstream: Upstream) -> None:
    upstream.answers[("DELETE", "/jobs/bobs")] = (403, {"message": "job bobs belongs to user/bob", "field": "name"})
    status, body, _ = call(ui, "DELETE", "/api/jobs/bobs", headers=own(ui))
    assert status == 403
    assert body == {"message": "job bobs belongs to user/bob", "field": "name"}


def test_a_bad_priority_is_refused_here(ui: UiServer, upstream: Upstream) -> None:
    status, body, _ = call(ui, "PATCH", "/api/jobs/j", headers=own(ui), body={"priority": "high"})
    assert (status, body["field"]) == (400, "priority")
    assert upstream.requests == []


def test_each_session_has_its_own_unguessable_token() -> None:
    assert UiGuard(8789).token != UiGuard(8789).token
    assert len(UiGuard(8789).token) >= 40


def test_smq_ui_says_when_its_port_is_taken(
    ui: UiServer, upstream: Upstream, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = str(ui.guard.port)
    code = main(["ui", "--api-url", upstream.url, "--region", "us-east-1", "--port", taken])
    assert code == 1
    assert capsys.readouterr().err == (
        f"smq: error: cannot listen on 127.0.0.1:{taken} (Address already in use); pass --port N (0: any free one)\n"
    )
