"""What a job's runner thread shares with the executors and with the outside world.

API calls, injected faults and the process watcher run on other threads; they never touch a
running job directly, they raise a `Signal` on its `Control`. The job's own thread waits on
that control and acts, so every effect on a process happens in one place.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from smq.local.sagemaker.contract import JobPaths, decode_hyperparameters, instance_count


class Signal(enum.Enum):
    """Raised on a job from outside its thread. Declaration order is priority order."""

    FAIL = "fail"  # injected instance failure: kill now, job fails
    STOP = "stop"  # StopTrainingJob, MaxRuntimeExceeded, MaxWaitTimeExceeded, shutdown
    INTERRUPT = "interrupt"  # injected spot interruption: stop, then restart from checkpoint
    HANG = "hang"  # injected hang: freeze, report 0% GPU
    EXITED = "exited"  # the training process ended by itself


class Control:
    """Sticky flags plus a condition variable: a flag raised before anyone waits is not lost."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._raised: set[Signal] = set()

    def raise_signal(self, signal: Signal) -> None:
        with self._condition:
            self._raised.add(signal)
            self._condition.notify_all()

    def is_raised(self, signal: Signal) -> bool:
        with self._condition:
            return signal in self._raised

    def clear(self, *signals: Signal) -> None:
        with self._condition:
            self._raised.difference_update(signals)

    def wait(
        self,
        timeout: float | None,
        ignore: frozenset[Signal] | set[Signal] = frozenset(),
    ) -> Signal | None:
        """The highest-priority raised signal not in `ignore`, or None after `timeout` seconds."""

        def first() -> Signal | None:
            return next((s for s in Signal if s in self._raised and s not in ignore), None)

        with self._condition:
            self._condition.wait_for(lambda: first() is not None, timeout)
            return first()


@dataclass(frozen=True)
class PhaseTimings:
    """How long the emulated platform phases last, in seconds.

    Real SageMaker spends minutes provisioning and downloading; the local stack keeps these
    short so end-to-end tests stay fast, while still passing through every secondary status.
    """

    starting: float = 0.1
    downloading: float = 0.05
    uploading: float = 0.05
    restart: float = 0.2  # Interrupted -> Starting after a spot interruption
    metric_interval: float = 10.0  # how often a training job reports its GPU utilization


@dataclass
class JobRun:
    """The executor's view of a job. Only the job's runner thread changes it, except
    `stop_grace`, which shutdown may lower before raising STOP."""

    name: str
    arn: str
    request: Mapping[str, Any]
    paths: JobPaths
    control: Control
    stop_grace: float
    attempt: int = 0
    training_seconds: float = 0.0  # time spent in Training, across attempts
    progress_seconds: float = 0.0  # synthetic jobs: work done, kept across restarts
    synced: dict[str, tuple[int, int]] = field(default_factory=dict)  # checkpoint files in S3

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return decode_hyperparameters(self.request.get("HyperParameters", {}))

    @property
    def spot(self) -> bool:
        return bool(self.request.get("EnableManagedSpotTraining"))

    @property
    def hosts(self) -> int:
        return instance_count(self.request)


@dataclass(frozen=True)
class TrainResult:
    """How the Training phase ended: by a signal, or by the program with an exit code."""

    ended_by: Signal | None = None
    exit_code: int | None = None
    failure_reason: str | None = None


class JobFailure(Exception):
    """A failure with the FailureReason SageMaker would report (e.g. `ClientError: ...`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Executor(Protocol):
    """Runs the work of a job's phases; the registry drives the statuses around it."""

    def validate(self, request: Mapping[str, Any]) -> None:
        """Reject at CreateTrainingJob what this executor could never run."""

    def prepare(self, run: JobRun) -> None:
        """Downloading: lay out the instance, fetch code, data and checkpoints."""

    def train(self, run: JobRun) -> TrainResult:
        """Training: block until the work ends or a FAIL/STOP/INTERRUPT signal ends it."""

    def save_checkpoints(self, run: JobRun) -> None:
        """After every attempt: copy the checkpoint directory to CheckpointConfig.S3Uri."""

    def upload_model(self, run: JobRun) -> str | None:
        """Uploading: store model.tar.gz; return its S3 URI (None if nothing was stored)."""
