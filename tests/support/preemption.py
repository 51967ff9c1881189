"""Preemption at the right moment for the client's end-to-end tests: the urgent job is submitted
from another thread once the patient job, which the test's own thread is waiting on, is ready."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from smq import TrainingQueue
from smq.errors import JobNotFound
from smq.local.stack import LocalStack

CHECKPOINT_SAVED = "checkpoint saved: step"


def checkpointed(stack: LocalStack) -> Callable[[Any], bool]:
    """Whether a job's current attempt has saved a checkpoint (its training log says so)."""

    def ready(job: Any) -> bool:
        return bool(job.training_job_name) and CHECKPOINT_SAVED in stack.training_logs(job.training_job_name)

    return ready


def submit_when(
    queue: TrainingQueue, ready: Callable[[Any], bool], submit: Callable[[], object], *, patient: str = "patient"
) -> threading.Thread:
    """Start a thread that calls `submit` once the job named `patient` is `ready` (within 180 s)."""

    def watch() -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                job = queue.get_job(patient)
            except JobNotFound:  # fit() or train() has not submitted it yet
                job = None
            if job is not None and ready(job):
                submit()
                return
            time.sleep(0.5)

    helper = threading.Thread(target=watch, daemon=True)
    helper.start()
    return helper
