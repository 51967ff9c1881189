"""SmqApiClient retries what may pass (429, 502, 503, 504, connection errors) with backoff, and says
so when it gives up. The servers are real, on 127.0.0.1: the local API Gateway (`ApiFront`) with a
scripted handler, and a bare HTTP server that drops connections. Waits are recorded, not slept."""

from __future__ import annotations

import json
import socket
import threading
import types
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3.util.retry
from smq.api_client import DEFAULT_MAX_RETRIES, MAX_RETRIES_ENV, SmqApiClient
from smq.errors import ApiUnreachable, SmqApiError, SmqError
from smq.local.api_front import ApiFront

CALLS: dict[str, Callable[[SmqApiClient], Any]] = {
    "POST /add-job": lambda client: client.add_job({"TrainingJobName": "train"}),
    "GET /jobs/{name}": lambda client: client.get_job("train"),
    "PATCH /jobs/{name}": lambda client: client.update_priority("train", 5),
    "DELETE /jobs/{name}": lambda client: client.cancel_job("train"),
    "GET /pools": lambda client: client.list_pools(),
    "GET /quotas": lambda client: client.get_quotas(),
    "GET /costs": lambda client: client.get_costs("owner", "30d"),
}


@pytest.fixture(autouse=True)
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits urllib3's Retry asks for, recorded instead of slept."""
    asked: list[float] = []
    monkeypatch.setattr(urllib3.util.retry, "time", types.SimpleNamespace(sleep=asked.append, time=lambda: 0.0))
    return asked


class Script:
    """An API handler that answers `failures` (status, headers) first, then 200 for ever."""

    def __init__(self, failures: list[tuple[int, dict[str, str]]]) -> None:
        self._failures = iter(failures)
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any], _context: Any) -> dict[str, Any]:
        self.events.append(event)
        status, headers = next(self._failures, (200, {}))
        message = "ok" if status == 200 else f"injected {status}"
        return {"statusCode": status, "headers": headers, "body": json.dumps({"message": message, "name": "train"})}


def client(url: str, *, retries: int = 4) -> SmqApiClient:
    return SmqApiClient(url, max_retries=retries, backoff_seconds=0.5)


@pytest.mark.parametrize("status", [429, 502, 503, 504])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_passing_failure_is_retried_until_the_api_answers(status: int, call: str) -> None:
    """POST too: the API replays an identical add-job, so a retried one cannot queue a job twice."""
    script = Script([(status, {})] * 3)

    with ApiFront(script) as front:
        answer = CALLS[call](client(front.url))

    assert answer in ({"message": "ok", "name": "train"}, [])
    assert len(script.events) == 4
    assert len({(event["httpMethod"], event["body"]) for event in script.events}) == 1


def test_the_waits_grow_exponentially(waits: list[float]) -> None:
    script = Script([(503, {})] * 4)

    with ApiFront(script) as front:
        client(front.url).get_job("train")

    assert waits == [1.0, 2.0, 4.0]


def test_the_apis_retry_after_is_the_wait(waits: list[float]) -> None:
    script = Script([(503, {"Retry-After": "7"}), (429, {"Retry-After": "3"})])

    with ApiFront(script) as front:
        client(front.url).get_job("train")

    assert waits == [7.0, 3.0]


def test_an_api_that_stays_unavailable_is_given_up_on_saying_so() -> None:
    script = Script([(503, {"Retry-After": "0"})] * 100)

    with ApiFront(script) as front, pytest.raises(SmqApiError) as raised:
        client(front.url, retries=3).add_job({"TrainingJobName": "train"})

    assert len(script.events) == 4
    assert raised.value.status == 503
    assert raised.value.message == "injected 503 (gave up after retrying 3 times; last answer HTTP 503)"


@pytest.mark.parametrize("status", [400, 403, 404, 409, 413, 500])
def test_refusals_and_internal_errors_are_not_retried(status: int) -> None:
    """A 500 means the API failed in a way a retry would not change (and may have applied the call)."""
    script = Script([(status, {})])

    with ApiFront(script) as front, pytest.raises(SmqApiError) as raised:
        client(front.url).add_job({"TrainingJobName": "train"})

    assert len(script.events) == 1
    assert raised.value.message == f"injected {status}"


class DroppingServer:
    """Accepts the first `drops` requests and closes the connection without an answer (or, `silent`,
    holds it open unanswered until the server stops), then answers 200 with an empty job list."""

    def __init__(self, drops: int, *, silent: bool = False) -> None:
        self.requests: list[tuple[str, bytes]] = []
        self._stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.requests.append((self.command, body))
                if len(server.requests) <= drops:
                    if silent:
                        server._stopping.wait()
                    self.close_connection = True
                    return
                payload = b'{"jobs": [], "next_token": null}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/prod"

    def __enter__(self) -> DroppingServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.mark.parametrize(
    "call",
    [lambda api: api.add_job({"TrainingJobName": "train"}), lambda api: api.list_jobs()],
    ids=["POST", "GET"],
)
def test_a_dropped_connection_is_retried(call: Callable[[SmqApiClient], Any]) -> None:
    with DroppingServer(drops=2) as server:
        call(client(server.url))

    assert len(server.requests) == 3
    assert len(set(server.requests)) == 1


def test_a_connection_dropped_every_time_is_given_up_on_saying_so() -> None:
    with DroppingServer(drops=100) as server, pytest.raises(ApiUnreachable) as raised:
        client(server.url, retries=2).list_pools()

    assert len(server.requests) == 3
    assert str(raised.value).endswith("(gave up after retrying 2 times)")


def test_an_api_that_never_answers_is_given_up_on_saying_so() -> None:
    with DroppingServer(drops=100, silent=True) as server, pytest.raises(ApiUnreachable) as raised:
        SmqApiClient(server.url, max_retries=1, backoff_seconds=0, timeout=0.05).add_job({"TrainingJobName": "a"})

    assert str(raised.value) == (
        f"cannot reach the smq API at {server.url}: no answer within 0.05 s (gave up after retrying 1 time)"
    )


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_api_that_is_never_reached_is_given_up_on_saying_so(closed_port: int, waits: list[float]) -> None:
    url = f"http://127.0.0.1:{closed_port}/prod"

    with pytest.raises(ApiUnreachable) as raised:
        client(url, retries=3).list_pools()

    assert (
        str(raised.value) == f"cannot reach the smq API at {url}: Connection refused (gave up after retrying 3 times)"
    )
    assert waits == [1.0, 2.0]


def test_the_number_of_retries_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "http://127.0.0.1:1/prod"
    monkeypatch.delenv(MAX_RETRIES_ENV, raising=False)
    assert SmqApiClient(url).max_retries == DEFAULT_MAX_RETRIES

    monkeypatch.setenv(MAX_RETRIES_ENV, "0")
    assert SmqApiClient(url).max_retries == 0
    assert SmqApiClient(url, max_retries=2).max_retries == 2


@pytest.mark.parametrize("value", ["-1", "many", "1.5"])
def test_a_bad_number_of_retries_names_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(MAX_RETRIES_ENV, value)

    with pytest.raises(SmqError, match=MAX_RETRIES_ENV):
        SmqApiClient("http://127.0.0.1:1/prod")
