"""Tailing an attempt's CloudWatch logs: each line once, hosts merged by time, endpoints as configured."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from smq.logs import LOG_GROUP, AttemptLogs, logs_client

NOW_MS = int(time.time() * 1000)
"""CloudWatch Logs refuses events older than 14 days."""


class Printed:
    """Stands in for the SDK's ColorWrap: records (host index, line)."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []

    def __call__(self, index: int, line: str) -> None:
        self.lines.append((index, line))


@pytest.fixture
def logs() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("logs", region_name="us-east-1")


def put(client: Any, stream: str, *events: tuple[int, str]) -> None:
    with contextlib.suppress(client.exceptions.ResourceAlreadyExistsException):
        client.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
    client.put_log_events(
        logGroupName=LOG_GROUP,
        logStreamName=stream,
        logEvents=[{"timestamp": NOW_MS + t, "message": m} for t, m in events],
    )


def test_lines_of_every_host_are_printed_once_in_time_order(logs: Any) -> None:
    logs.create_log_group(logGroupName=LOG_GROUP)
    put(logs, "job-1/algo-1-1700000000", (1, "host1 a"), (3, "host1 b"))
    put(logs, "job-1/algo-2-1700000000", (2, "host2 a"))
    put(logs, "job-10/algo-1-1700000000", (1, "another job's line"))
    printed = Printed()
    tail = AttemptLogs(logs, "job-1", instance_count=2, color=printed)  # type: ignore[arg-type]

    first = tail.flush()
    put(logs, "job-1/algo-2-1700000000", (4, "host2 b"))
    second = tail.flush()

    assert (first, second) == (3, 1)
    assert printed.lines == [(0, "host1 a"), (1, "host2 a"), (0, "host1 b"), (1, "host2 b")]


def test_nothing_to_read_before_the_attempt_writes(logs: Any) -> None:
    printed = Printed()

    assert AttemptLogs(logs, "job-1", instance_count=1, color=printed).flush() == 0  # type: ignore[arg-type]
    assert printed.lines == []


@pytest.mark.parametrize(
    ("env", "endpoint"),
    [
        ({"AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": "http://127.0.0.1:1"}, "http://127.0.0.1:1"),
        ({"AWS_ENDPOINT_URL_LOGS": "http://127.0.0.1:2"}, "http://127.0.0.1:2"),
        (
            {"AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_LOGS": "http://127.0.0.1:2"},
            "http://127.0.0.1:1",
        ),
        ({}, "https://logs.us-east-1.amazonaws.com"),
    ],
)
def test_the_logs_endpoint_is_the_configured_one(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], endpoint: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    client = logs_client(boto3.Session(region_name="us-east-1"), env=env)

    assert client.meta.endpoint_url == endpoint
