"""Client tests run offline with fake credentials; `offline` makes any attempt to leave the machine
(a connect or a DNS lookup of anything but loopback) fail the test."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from smq.local.api_front import ApiFront

from tests.client.queue_world import POOL, QueueWorld
from tests.client.stub_api import StubHandler
from tests.support.aws import moto_server, use_test_credentials

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class LeftTheMachine(AssertionError):
    """Raised (and recorded) when code under test reaches for a non-loopback address."""


def _is_loopback(host: Any) -> bool:
    if host is None:
        return True
    host = host.decode() if isinstance(host, bytes) else str(host)
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every non-loopback connect or lookup raises and is listed in the returned list, so a test can
    assert the list is empty even when the code under test swallowed the error (as SDK telemetry
    does)."""
    attempts: list[str] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else None
        if not _is_loopback(host):
            attempts.append(str(host))
            raise LeftTheMachine(f"tried to reach {host}")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        check((host,))
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


@pytest.fixture(autouse=True)
def _test_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    use_test_credentials(monkeypatch)
    for name in ("SMQ_API_URL", "SMQ_STACK_NAME", "SAGEMAKER_ADMIN_CONFIG_OVERRIDE", "SAGEMAKER_USER_CONFIG_OVERRIDE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    # Failure paths answer at once; tests of the client's retries pass max_retries themselves.
    monkeypatch.setenv("SMQ_API_MAX_RETRIES", "0")


@pytest.fixture
def world() -> Iterator[QueueWorld]:
    """The real API handler and scheduler over fakes, one instance of the test pool."""
    with QueueWorld({POOL: 1}) as queue:
        yield queue


@pytest.fixture
def moto_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto server for S3, STS and CloudWatch Logs, reached the way the local stack reaches it."""
    with moto_server() as url:
        for service in ("S3", "STS", "CLOUDWATCH_LOGS", "CLOUDFORMATION"):
            monkeypatch.setenv(f"AWS_ENDPOINT_URL_{service}", url)
        yield url


@pytest.fixture
def isolated_home(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user SageMaker config or AWS config file can change what the SDK does."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


@pytest.fixture
def stub() -> StubHandler:
    return StubHandler()


@pytest.fixture
def front(stub: StubHandler) -> Iterator[ApiFront]:
    with ApiFront(stub) as running:
        yield running
