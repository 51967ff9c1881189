"""The job page's log lines (smq.ui.log_lines) over moto's CloudWatch Logs: every host's stream of
the attempt, merged in time order, the newest `limit`; an attempt with no logs yet has none."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from smq.logs import LOG_GROUP
from smq.ui.log_lines import attempt_log_lines

from tests.support.aws import use_test_credentials


@pytest.fixture
def logs() -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as monkeypatch, mock_aws():
        use_test_credentials(monkeypatch)
        yield boto3.client("logs")


START_MS = int(time.time() * 1000) - 60_000
"""CloudWatch Logs refuses events older than its retention: the lines are of the last minute."""


def write(logs: Any, stream: str, *events: tuple[int, str]) -> None:
    logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
    logs.put_log_events(
        logGroupName=LOG_GROUP,
        logStreamName=stream,
        logEvents=[{"timestamp": START_MS + at, "message": message} for at, message in events],
    )


def test_lines_of_every_host_merged_in_time_order_newest_kept(logs: Any) -> None:
    logs.create_log_group(logGroupName=LOG_GROUP)
    write(logs, "job-abc-1/algo-1-100", (1_000, "a1"), (3_000, "a3"), (5_000, "a5"))
    write(logs, "job-abc-1/algo-2-100", (2_000, "b2"), (4_000, "b4"))
    write(logs, "job-abc-10/algo-1-100", (2_500, "another attempt"))

    lines = attempt_log_lines(logs, "job-abc-1", limit=4)

    assert [(line["host"], line["message"]) for line in lines] == [
        ("algo-2-100", "b2"),
        ("algo-1-100", "a3"),
        ("algo-2-100", "b4"),
        ("algo-1-100", "a5"),
    ]


def test_an_attempt_without_logs_has_no_lines(logs: Any) -> None:
    assert attempt_log_lines(logs, "job-abc-1") == []
    logs.create_log_group(logGroupName=LOG_GROUP)
    assert attempt_log_lines(logs, "job-abc-1") == []
