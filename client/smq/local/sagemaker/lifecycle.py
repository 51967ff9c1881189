"""The life of one training job, run on its own thread.

    InProgress: Starting -> Downloading -> Training -> Uploading -> Completed
                                              |-> Failed          (non-zero exit, injected fail)
    StopTrainingJob / MaxRuntime / MaxWait:   -> Stopping -> Stopped | MaxRuntimeExceeded
                                                                     | MaxWaitTimeExceeded
    Spot interruption (injected):  Training -> Interrupted -> Starting -> ... (from checkpoint)

A job that reuses a warm pool passes through Starting at once: its instances are provisioned.
Checkpoints go to S3 after every Training phase, however it ended. Statuses change only
through the registry (`jobs`), which refuses to move a job that a signal has claimed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from smq.local.sagemaker.records import COMPLETED, FAILED, STOPPED, JobRecord
from smq.local.sagemaker.runtime import Executor, JobFailure, PhaseTimings, Signal, TrainResult

INJECTED_FAILURE = (
    "InternalServerError: We encountered an internal error. Please try again. "
    "(instance failure injected by smq local inject)"
)
"""What an injected `fail` reports unless the injection names another FailureReason."""
_STOPPED_MESSAGES = {
    "Stopped": "Training job stopped",
    "MaxRuntimeExceeded": "Training job stopped: it exceeded MaxRuntimeInSeconds",
    "MaxWaitTimeExceeded": "Training job stopped: it exceeded MaxWaitTimeInSeconds",
}
_PAUSE_IGNORES = frozenset({Signal.HANG, Signal.EXITED})

logger = logging.getLogger(__name__)


class JobRegistry(Protocol):
    """What a job's thread needs of the registry that starts it (jobs.TrainingJobs): declared here
    so that the registry depends on the lifecycle and not the other way round."""

    executor: Executor
    timings: PhaseTimings

    def enter(
        self, job: JobRecord, secondary: str, message: str, ignore: frozenset[Signal] | set[Signal] = frozenset()
    ) -> Signal | None: ...

    def restart(self, job: JobRecord, message: str) -> Signal | None: ...

    def stop_outcome(self, job: JobRecord) -> str | None: ...

    def stop_if_running(self, job: JobRecord, outcome: str) -> None: ...

    def end(
        self,
        job: JobRecord,
        status: str,
        secondary: str,
        message: str,
        *,
        failure_reason: str | None = None,
        model_artifacts: str | None = None,
    ) -> None: ...


def run_job(jobs: JobRegistry, job: JobRecord) -> None:
    """The job thread's body: attempts until the job ends, then its terminal status."""
    run = job.run
    deadline = None
    if run.spot and job.max_wait:
        deadline = _timer(job.max_wait, jobs.stop_if_running, job, "MaxWaitTimeExceeded")
    try:
        _finish(jobs, job, _attempts(jobs, job))
    except JobFailure as exc:
        _fail(jobs, job, exc.reason)
    except Exception as exc:  # a bug here must still end the job, never leave it InProgress
        logger.exception("training job %s crashed", job.name)
        _fail(jobs, job, f"InternalServerError: {exc}")
    finally:
        if deadline is not None:
            deadline.cancel()
        job.done.set()


def _attempts(jobs: JobRegistry, job: JobRecord) -> TrainResult:
    """Run attempts until one is not ended by a spot interruption."""
    while True:
        job.run.attempt += 1
        # Each step returns None to go on, or the signal that ends the attempt early.
        signal = (
            _pause(job, 0.0 if job.warm_source is not None else jobs.timings.starting)
            or jobs.enter(job, "Downloading", "Downloading input data")
            or _prepare(jobs, job)
            or jobs.enter(job, "Training", "Training image download completed. Training in progress.")
        )
        if signal is None:
            result = _train(jobs, job)
            if result.ended_by is not Signal.INTERRUPT:
                return result
        elif signal is not Signal.INTERRUPT:
            return TrainResult(ended_by=signal)
        signal = _pause(job, jobs.timings.restart, {Signal.INTERRUPT}) or jobs.restart(
            job, "Restarting the training job on a new spot instance after an interruption"
        )
        if signal is not None:
            return TrainResult(ended_by=signal)


def _prepare(jobs: JobRegistry, job: JobRecord) -> Signal | None:
    started = time.monotonic()
    jobs.executor.prepare(job.run)
    return _pause(job, jobs.timings.downloading - (time.monotonic() - started))


def _train(jobs: JobRegistry, job: JobRecord) -> TrainResult:
    run = job.run
    limit = _timer(job.max_runtime - run.training_seconds, jobs.stop_if_running, job, "MaxRuntimeExceeded")
    started = time.monotonic()
    try:
        return jobs.executor.train(run)
    finally:
        limit.cancel()
        run.training_seconds += time.monotonic() - started
        jobs.executor.save_checkpoints(run)


def _finish(jobs: JobRegistry, job: JobRecord, result: TrainResult) -> None:
    control = job.run.control
    if control.is_raised(Signal.FAIL):
        jobs.end(job, FAILED, "Failed", "Training job failed", failure_reason=_injected(job))
    elif control.is_raised(Signal.STOP):
        _stopped(jobs, job)
    elif result.failure_reason is not None:
        jobs.end(job, FAILED, "Failed", "Training job failed", failure_reason=result.failure_reason)
    elif jobs.enter(job, "Uploading", "Uploading generated training model", ignore={Signal.INTERRUPT}) is not None:
        _finish(jobs, job, result)  # stopped or failed on the way; the flags say which
    else:
        started = time.monotonic()
        artifacts = jobs.executor.upload_model(job.run)
        _pause(job, jobs.timings.uploading - (time.monotonic() - started))
        jobs.end(job, COMPLETED, "Completed", "Training job completed", model_artifacts=artifacts)


def _stopped(jobs: JobRegistry, job: JobRecord) -> None:
    """SageMaker keeps what a stopped job saved: its model is uploaded too."""
    try:
        artifacts = jobs.executor.upload_model(job.run)
    except JobFailure as exc:
        logger.warning("stopped job %s: %s", job.name, exc.reason)
        artifacts = None
    outcome = jobs.stop_outcome(job) or "Stopped"
    jobs.end(job, STOPPED, outcome, _STOPPED_MESSAGES[outcome], model_artifacts=artifacts)


def _fail(jobs: JobRegistry, job: JobRecord, reason: str) -> None:
    """A failure while the job was being stopped ends it Stopped, as the stop asked."""
    if job.run.control.is_raised(Signal.STOP) and not job.run.control.is_raised(Signal.FAIL):
        outcome = jobs.stop_outcome(job) or "Stopped"
        jobs.end(job, STOPPED, outcome, _STOPPED_MESSAGES[outcome])
    else:
        jobs.end(
            job,
            FAILED,
            "Failed",
            "Training job failed",
            failure_reason=_injected(job) if job.run.control.is_raised(Signal.FAIL) else reason,
        )


def _injected(job: JobRecord) -> str:
    return job.injected_failure or INJECTED_FAILURE


def _pause(
    job: JobRecord,
    seconds: float,
    ignore: frozenset[Signal] | set[Signal] = frozenset(),
) -> Signal | None:
    """Let a platform phase take its time, unless a signal cuts it short."""
    return job.run.control.wait(max(0.0, seconds), _PAUSE_IGNORES | ignore)


def _timer(seconds: float, action: Callable[..., None], *args: object) -> threading.Timer:
    timer = threading.Timer(max(0.0, seconds), action, args)
    timer.daemon = True
    timer.start()
    return timer
