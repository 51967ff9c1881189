"""The `synthetic` executor: jobs without a process, for fast tests and benchmarks.

A job trains for `smq_synthetic_duration` seconds (default 5) and then ends as
`smq_synthetic_outcome` says: `complete`, `fail`, or `hang` (stays in Training, doing nothing, until
stopped). While it trains, every host reports busy GPUs; once hung (by its outcome or an injected
`hang`), idle ones. Progress is kept across spot restarts, as if checkpointed continuously, so an
interrupted job resumes where it was.
"""

from __future__ import annotations

import io
import math
import tarfile
import time
from collections.abc import Mapping
from typing import Any

from smq.local.sagemaker.aws import (
    GPU_BUSY_PERCENT,
    GPU_IDLE_PERCENT,
    TRANSFER_ERRORS,
    AwsServices,
    join_s3_uri,
    split_s3_uri,
)
from smq.local.sagemaker.contract import decode_hyperparameters
from smq.local.sagemaker.errors import ValidationError
from smq.local.sagemaker.runtime import JobFailure, JobRun, PhaseTimings, Signal, TrainResult

DURATION = "smq_synthetic_duration"
OUTCOME = "smq_synthetic_outcome"
DEFAULT_DURATION = 5.0
OUTCOMES = ("complete", "fail", "hang")


def synthetic_plan(hyperparameters: Mapping[str, str]) -> tuple[float, str]:
    """(duration, outcome) from raw hyperparameters, which may be JSON-encoded (`"\\"fail\\""`)."""
    decoded = decode_hyperparameters(hyperparameters)
    duration = decoded.get(DURATION, DEFAULT_DURATION)
    if isinstance(duration, str):
        try:
            duration = float(duration)
        except ValueError:
            duration = -1.0
    if isinstance(duration, bool) or not isinstance(duration, int | float) or duration < 0:
        raise ValidationError(f"{DURATION} must be a number of seconds >= 0, not {decoded.get(DURATION)!r}.")
    outcome = str(decoded.get(OUTCOME, "complete"))
    if outcome not in OUTCOMES:
        raise ValidationError(f"{OUTCOME} must be one of {', '.join(OUTCOMES)}, not {outcome!r}.")
    return float(duration), outcome


class SyntheticExecutor:
    """A timer standing in for a training process."""

    def __init__(self, aws: AwsServices, timings: PhaseTimings) -> None:
        self._aws = aws
        self._timings = timings

    def validate(self, request: Mapping[str, Any]) -> None:
        synthetic_plan(request.get("HyperParameters", {}))

    def prepare(self, run: JobRun) -> None:
        """Nothing to download: a synthetic instance has no file system."""

    def train(self, run: JobRun) -> TrainResult:
        duration, outcome = synthetic_plan(run.request.get("HyperParameters", {}))
        handled: set[Signal] = {Signal.EXITED}
        started, done_before = time.monotonic(), run.progress_seconds

        def progress() -> float:
            if Signal.HANG in handled:
                return run.progress_seconds
            return min(duration, done_before + time.monotonic() - started)

        while True:
            hung = Signal.HANG in handled
            self._aws.report_gpu_utilization(run.name, run.hosts, GPU_IDLE_PERCENT if hung else GPU_BUSY_PERCENT)
            left = math.inf if hung else duration - progress()
            signal = run.control.wait(max(0.0, min(left, self._timings.metric_interval)), handled)
            run.progress_seconds = progress()
            done = signal is None and not hung and run.progress_seconds >= duration
            if signal is Signal.HANG or (done and outcome == "hang"):
                handled.add(Signal.HANG)
            elif done and outcome == "complete":
                return TrainResult(exit_code=0)
            elif done:
                return TrainResult(
                    exit_code=1, failure_reason=(f"AlgorithmError: synthetic job failed ({OUTCOME}=fail)")
                )
            elif signal is not None:
                return TrainResult(ended_by=signal)

    def save_checkpoints(self, run: JobRun) -> None:
        """Nothing to upload: progress is the checkpoint, and it lives in `run`."""

    def upload_model(self, run: JobRun) -> str | None:
        """An empty model.tar.gz where SageMaker puts the model, so a synthetic job reports
        ModelArtifacts like any other (the SageMaker SDK's `model_data` reads it)."""
        uri = join_s3_uri(run.request["OutputDataConfig"]["S3OutputPath"], run.name, "output", "model.tar.gz")
        archive = io.BytesIO()
        tarfile.open(fileobj=archive, mode="w:gz").close()
        bucket, key = split_s3_uri(uri)
        try:
            self._aws.s3().put_object(Bucket=bucket, Key=key, Body=archive.getvalue())
        except TRANSFER_ERRORS as exc:
            raise JobFailure(f"ClientError: Unable to upload the model artifacts: {exc}") from exc
        return uri
