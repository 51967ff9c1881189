"""Shutting the local SageMaker service down: every job is stopped and waited for, but a job thread
stuck in a call that never returns cannot hold the service (and `smq local up`) open for good."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from conftest import synthetic_job, unique
from smq.local.sagemaker import jobs as jobs_module
from smq.local.sagemaker.runtime import JobRun, TrainResult
from smq.local.sagemaker.synthetic import SyntheticExecutor


@pytest.mark.timeout(60)
def test_a_job_stuck_past_the_stop_grace_is_logged_and_left_behind(
    make_stack: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()
    training = threading.Event()

    def stuck(_executor: SyntheticExecutor, _run: JobRun) -> TrainResult:
        training.set()
        release.wait()  # deaf to STOP, as a call that never returns is
        return TrainResult(exit_code=0)

    monkeypatch.setattr(SyntheticExecutor, "train", stuck)
    monkeypatch.setattr(jobs_module, "SHUTDOWN_MARGIN_SECONDS", 0.5)
    stack = make_stack(stop_grace_seconds=0.1)
    name = unique("stuck")
    stack.client.create_training_job(**synthetic_job(name, duration=3600))
    assert training.wait(30), "the job never reached Training"
    try:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger=jobs_module.__name__):
            stack.service.shutdown()
        took = time.monotonic() - started
    finally:
        release.set()

    assert took < 20, "the shutdown waited for the stuck job"
    assert f"training job {name} did not end after the stop" in caplog.text
