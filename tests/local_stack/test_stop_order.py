"""Stopping the local stack: what invokes the functions (the alarm evaluator, the queues' pollers,
the routers, the local EventBridge) has stopped before the jobs are, so no pass reacts to the jobs'
last events by calling a SageMaker endpoint that is going away (each refused call retried with
backoff held a stop past two minutes)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from smq import SmqApiClient
from smq.local.sagemaker import LocalSageMaker
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import synthetic_request, wait_for

INVOKERS = (
    "smq-alarm-evaluator",
    "smq-sqs-",
    "smq-event-router",
    "smq-lambda-invoke",
    "smq-reconcile",
    "smq-eventbridge",
)
"""The names of the threads that invoke functions (set where each is started)."""


@pytest.mark.slow
def test_nothing_invokes_a_function_once_the_jobs_are_being_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running_at_job_stop: list[str] = []
    shutdown = LocalSageMaker.shutdown

    def note_invokers_then_shut_down(service: LocalSageMaker) -> None:
        running_at_job_stop.extend(thread.name for thread in threading.enumerate() if thread.name.startswith(INVOKERS))
        shutdown(service)

    monkeypatch.setattr(LocalSageMaker, "shutdown", note_invokers_then_shut_down)
    options = LocalStackOptions(executor="synthetic", workdir=tmp_path, reconcile_every_seconds=1)
    with LocalStack(options) as stack:
        client = SmqApiClient(stack.api_url, region="us-east-1")
        client.add_job(synthetic_request("running-at-stop", duration=600))
        wait_for(client, "running-at-stop", {"running"})

    assert running_at_job_stop == []
