"""`smq ui`'s local server without a browser: it listens on 127.0.0.1 only, refuses other Host
headers (DNS rebinding), serves nothing but the address it printed to a caller without its session
cookie (another local user), lets a state-changing request through only with the page's action token
and its own Origin (CSRF), and forwards each call to the API signed with the user's credentials, the
API's refusals passed back as they are."""

from __future__ import annotations

import http.client
import json
import re
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
    ui: UiServer,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: Any = None,
    signed_in: bool = True,
) -> tuple[int, Any, dict[str, str]]:
    """One request as the browser sends it once the printed address has set the cookie (`signed_in`)."""
    host, port = ui.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    sent = {"Host": f"127.0.0.1:{port}", **(headers or {})}
    if signed_in:
        sent.setdefault("Cookie", f"{ui.guard.cookie_name}={ui.guard.token}")
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
    return {"Origin": f"http://127.0.0.1:{ui.guard.port}", TOKEN_HEADER: ui.guard.action_token}


def test_listens_on_the_loopback_address_only(ui: UiServer) -> None:
    assert ui.address[0] == "127.0.0.1"
    assert ui.url == f"http://127.0.0.1:{ui.guard.port}/?token={ui.guard.token}"


def test_the_page_carries_the_action_token_but_not_the_session_cookies_and_forbids_other_scripts(
    ui: UiServer,
) -> None:
    status, page, headers = call(ui, "GET", "/")
    assert status == 200
    assert f'content="{ui.guard.action_token}"' in page
    assert ui.guard.token not in page
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
        ({"Origin": "OWN", TOKEN_HEADER: "SESSION"}, TOKEN_HEADER),
    ],
)
@pytest.mark.parametrize(("method", "body"), [("DELETE", None), ("PATCH", {"priority": 5})])
def test_an_action_without_the_token_or_from_another_origin_is_refused(
    ui: UiServer, upstream: Upstream, headers: dict[str, str], why: str, method: str, body: Any
) -> None:
    own_headers = own(ui)
    sent = {
        name: {"OWN": own_headers["Origin"], "TOKEN": ui.guard.action_token, "SESSION": ui.guard.token}.get(
            value, value
        )
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


def test_reads_need_no_action_token_and_go_to_the_api(ui: UiServer, upstream: Upstream) -> None:
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


def test_each_session_has_its_own_unguessable_tokens() -> None:
    first, second = UiGuard(8789), UiGuard(8789)
    assert len({first.token, second.token, first.action_token, second.action_token}) == 4
    assert min(len(first.token), len(first.action_token)) >= 40
    assert UiGuard(8790).cookie_name != first.cookie_name  # cookies are not kept apart by port


def test_the_page_without_the_printed_address_is_refused_and_shows_no_token(ui: UiServer) -> None:
    for path in ("/", "/index.html", "/static/app.js", "/static/style.css", "/nowhere"):
        status, body, headers = call(ui, "GET", path, signed_in=False)
        assert status == 403, path
        assert headers["content-type"] == "text/plain; charset=utf-8"
        assert "open the address `smq ui` printed" in body
        assert ui.guard.token not in body
        assert ui.guard.action_token not in body
        assert "set-cookie" not in headers


def test_the_printed_address_sets_the_cookie_and_leads_to_the_page_without_the_token(ui: UiServer) -> None:
    status, body, headers = call(ui, "GET", ui.url.removeprefix(f"http://127.0.0.1:{ui.guard.port}"), signed_in=False)
    assert status == 303
    assert headers["location"] == "/"
    assert ui.guard.token not in body
    cookie, *attributes = (part.strip() for part in headers["set-cookie"].split(";"))
    assert cookie == f"{ui.guard.cookie_name}={ui.guard.token}"
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(attributes)
    status, page, _ = call(ui, "GET", "/", headers={"Cookie": f"other=1; {cookie}"}, signed_in=False)
    assert status == 200
    assert f'content="{ui.guard.action_token}"' in page


def test_the_redirect_keeps_the_rest_of_the_address(ui: UiServer) -> None:
    status, _, headers = call(ui, "GET", f"/index.html?view=queue&token={ui.guard.token}", signed_in=False)
    assert (status, headers["location"]) == (303, "/index.html?view=queue")


@pytest.mark.parametrize(
    ("path", "cookie"),
    [
        ("/?token=guessed", None),
        ("/?token=", None),
        ("/?token=%C3%A9t%C3%A9", None),
        ("/", "WRONG=TOKEN"),
        ("/", "NAME=guessed"),
        ("/", "NAME="),
        ("/", "NAME=ACTION"),
        ("/", "garbage;;=; NAME"),
        ("/static/app.js", "NAME=guessed"),
        ("/api/jobs", "NAME=guessed"),
    ],
)
def test_a_wrong_token_is_refused(ui: UiServer, upstream: Upstream, path: str, cookie: str | None) -> None:
    headers = {}
    if cookie is not None:
        names = {"NAME": ui.guard.cookie_name, "WRONG": "smq-ui-1", "TOKEN": ui.guard.token}
        names["ACTION"] = ui.guard.action_token
        headers["Cookie"] = "".join(names.get(part, part) for part in re.split(r"(\W)", cookie))
    status, body, response_headers = call(ui, "GET", path, headers=headers, signed_in=False)
    assert status == 403
    assert "set-cookie" not in response_headers
    assert ui.guard.token not in str(body)
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/jobs", None),
        ("GET", "/api/pools", None),
        ("GET", "/api/quotas", None),
        ("GET", "/api/attempts?from=2026-11-26T09:00:00Z", None),
        ("GET", "/api/jobs/j?include=request", None),
        ("GET", "/api/logs/j", None),
        ("DELETE", "/api/jobs/j", None),
        ("PATCH", "/api/jobs/j", {"priority": 9}),
    ],
)
def test_the_api_without_the_cookie_is_refused_and_nothing_is_forwarded(
    ui: UiServer, upstream: Upstream, method: str, path: str, body: Any
) -> None:
    for query_token in ("", f"{'&' if '?' in path else '?'}token={ui.guard.token}"):
        status, answer, _ = call(ui, method, path + query_token, headers=own(ui), body=body, signed_in=False)
        assert status == 403
        assert "open the address `smq ui` printed" in answer["message"]
        assert ui.guard.token not in answer["message"]
    assert upstream.requests == []


def test_smq_ui_prints_the_address_that_signs_in(
    upstream: Upstream, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    printed: list[UiServer] = []

    def stop_at_once(server: UiServer) -> None:
        printed.append(server)
        raise KeyboardInterrupt

    monkeypatch.setattr(UiServer, "serve_forever", stop_at_once)
    assert main(["ui", "--api-url", upstream.url, "--region", "us-east-1", "--port", "0"]) == 0
    address = f"http://127.0.0.1:{printed[0].guard.port}/?token={printed[0].guard.token}"
    assert f"\nsmq ui: open {address} (signs calls to " in "\n" + capsys.readouterr().out


def test_smq_ui_says_when_its_port_is_taken(
    ui: UiServer, upstream: Upstream, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = str(ui.guard.port)
    code = main(["ui", "--api-url", upstream.url, "--region", "us-east-1", "--port", taken])
    assert code == 1
    assert capsys.readouterr().err == (
        f"smq: error: cannot listen on 127.0.0.1:{taken} (Address already in use); pass --port N (0: any free one)\n"
    )


@pytest.mark.parametrize("length", ["abc", "-5", "1e3"])
def test_a_malformed_content_length_is_a_400_and_nothing_is_forwarded(
    ui: UiServer, upstream: Upstream, length: str
) -> None:
    status, _, _ = call(ui, "DELETE", "/api/jobs/a", headers={**own(ui), "Content-Length": length})

    assert status == 400
    assert upstream.requests == []
