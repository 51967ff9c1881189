"""End to end with real processes: a stop is SIGTERM, then SIGKILL after the grace period."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, process_request, synthetic_request, upload_source, wait_for

GRACE_SECONDS = 3.0
EXECUTOR_LOGGER = "smq.local.sagemaker.process"
"""Logs (at INFO) each process it has to kill because it outlived its grace period."""
GRACEFUL = """
import signal, sys, time
def stop(*_):
    print("got SIGTERM, saving and leaving", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("started", flush=True)
while True:
    time.sleep(0.1)
"""
STUBBORN = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("started and ignoring SIGTERM", flush=True)
while True:
    time.sleep(0.1)
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        capacity={POOL: 2},
        executor="process",
        workdir=tmp_path_factory.mktemp("process-stack"),
        stop_grace_seconds=GRACE_SECONDS,
        reconcile_every_seconds=5,
    )
    with LocalStack(options) as running:
        yield running


def _source(stack: LocalStack, tmp_path: Path, name: str, script: str) -> str:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "main.py").write_text(script)
    return upload_source(stack, directory, f"code/{name}.tar.gz")


def _wait_for_log(stack: LocalStack, training_job: str, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while text not in stack.training_logs(training_job):
        assert time.monotonic() < deadline, f"{training_job} never logged {text!r}"
        time.sleep(0.2)


def kills(caplog: pytest.LogCaptureFixture, training_job: str) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == EXECUTOR_LOGGER and training_job in record.getMessage()]  # fmt: skip


def test_cancel_sends_sigterm_and_a_graceful_job_ends_at_once(
    stack: LocalStack, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=EXECUTOR_LOGGER)
    client = SmqApiClient(stack.api_url, region="us-east-1")
    client.add_job(
        process_request(
            "graceful", priority=0, source_uri=_source(stack, tmp_path, "graceful", GRACEFUL), program="main.py"
        )
    )
    running = wait_for(client, "graceful", {"running"})
    _wait_for_log(stack, running["training_job_name"], "started")

    client.cancel_job("graceful")
    cancelled = wait_for(client, "graceful", {"cancelled"}, timeout=30)

    assert "got SIGTERM" in stack.training_logs(cancelled["attempts"][-1]["training_job_name"])
    assert not kills(caplog, running["training_job_name"]), "it exited by itself, before its grace was over"


@pytest.mark.slow
def test_a_job_that_ignores_sigterm_is_killed_after_the_grace_period(
    stack: LocalStack, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=EXECUTOR_LOGGER)
    client = SmqApiClient(stack.api_url, region="us-east-1")
    client.add_job(
        process_request(
            "stubborn", priority=0, source_uri=_source(stack, tmp_path, "stubborn", STUBBORN), program="main.py"
        )
    )
    running = wait_for(client, "stubborn", {"running"})
    _wait_for_log(stack, running["training_job_name"], "ignoring SIGTERM")

    began = time.monotonic()
    client.cancel_job("stubborn")
    wait_for(client, "stubborn", {"cancelled"}, timeout=30)

    assert time.monotonic() - began >= GRACE_SECONDS  # not killed before its grace was over
    assert kills(caplog, running["training_job_name"])


def test_a_request_with_no_entry_point_fails_with_the_services_reason(stack: LocalStack) -> None:
    """The process executor refuses a request with no entry point: a lasting refusal fails the job."""
    client = SmqApiClient(stack.api_url, region="us-east-1")
    client.add_job(synthetic_request("no-entry-point", duration=1))

    job = wait_for(client, "no-entry-point", {"failed"}, timeout=30)

    assert "sagemaker_program" in job["reason"] or "entry" in job["reason"].lower()
