"""One training job's record: its request, status history, and the API shapes built from them.

Times are epoch seconds (floats), which is how the JSON protocol carries timestamps. The record
is guarded by the registry's lock; nothing here locks or emits events.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from smq.local.sagemaker.runtime import JobRun
from smq.local.sagemaker.warm_pools import WarmPool

IN_PROGRESS, COMPLETED, FAILED, STOPPING, STOPPED = ("InProgress", "Completed", "Failed", "Stopping", "Stopped")
TERMINAL = frozenset({COMPLETED, FAILED, STOPPED})
DEFAULT_MAX_RUNTIME = 86400

# Request members DescribeTrainingJob returns as they were sent.
_ECHOED = (
    "AlgorithmSpecification",
    "RoleArn",
    "InputDataConfig",
    "OutputDataConfig",
    "ResourceConfig",
    "VpcConfig",
    "CheckpointConfig",
    "DebugHookConfig",
    "ExperimentConfig",
    "DebugRuleConfigurations",
    "TensorBoardOutputConfig",
    "ProfilerConfig",
    "ProfilerRuleConfigurations",
    "Environment",
    "RetryStrategy",
    "RemoteDebugConfig",
    "InfraCheckConfig",
)


@dataclass
class JobRecord:
    name: str
    arn: str
    request: Mapping[str, Any]
    created: float
    tags: dict[str, str]
    run: JobRun
    status: str = IN_PROGRESS
    secondary: str | None = None
    transitions: list[dict[str, Any]] = field(default_factory=list)
    last_modified: float = 0.0
    training_start: float | None = None
    training_end: float | None = None
    failure_reason: str | None = None
    model_artifacts: str | None = None
    stop_outcome: str | None = None  # the secondary status a stopping job will end in
    injected_failure: str | None = None  # the FailureReason an injected `fail` ends the job with
    warm_pool: WarmPool | None = None  # its WarmPoolStatus, once it has one
    warm_source: str | None = None  # the job whose warm pool it reused
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def max_runtime(self) -> int:
        return self.request.get("StoppingCondition", {}).get("MaxRuntimeInSeconds", DEFAULT_MAX_RUNTIME)

    @property
    def max_wait(self) -> int | None:
        return self.request.get("StoppingCondition", {}).get("MaxWaitTimeInSeconds")

    def move(self, status: str, secondary: str, message: str, now: float) -> None:
        """Record a status change; a new secondary status closes the previous transition."""
        if secondary != self.secondary:
            if self.transitions:
                self.transitions[-1]["EndTime"] = now
            self.transitions.append({"Status": secondary, "StartTime": now, "StatusMessage": message})
        self.status, self.secondary, self.last_modified = status, secondary, now
        if status in TERMINAL:
            self.transitions[-1]["EndTime"] = now
            self.training_end = now

    def describe(self, now: float) -> dict[str, Any]:
        """The DescribeTrainingJob response at `now`."""
        request = self.request
        out: dict[str, Any] = {
            "TrainingJobName": self.name,
            "TrainingJobArn": self.arn,
            "TrainingJobStatus": self.status,
            "SecondaryStatus": self.secondary,
            "HyperParameters": dict(request.get("HyperParameters", {})),
            "StoppingCondition": {"MaxRuntimeInSeconds": DEFAULT_MAX_RUNTIME, **request.get("StoppingCondition", {})},
            "EnableNetworkIsolation": bool(request.get("EnableNetworkIsolation")),
            "EnableInterContainerTrafficEncryption": bool(request.get("EnableInterContainerTrafficEncryption")),
            "EnableManagedSpotTraining": bool(request.get("EnableManagedSpotTraining")),
            "CreationTime": self.created,
            "LastModifiedTime": self.last_modified,
            "SecondaryStatusTransitions": copy.deepcopy(self.transitions),
        }
        out.update({k: copy.deepcopy(request[k]) for k in _ECHOED if k in request})
        if self.model_artifacts:
            out["ModelArtifacts"] = {"S3ModelArtifacts": self.model_artifacts}
        if self.failure_reason:
            out["FailureReason"] = self.failure_reason
        if self.training_start is not None:
            out["TrainingStartTime"] = self.training_start
        if self.training_end is not None:
            out["TrainingEndTime"] = self.training_end
            start = self.training_start if self.training_start is not None else self.created
            out["TrainingTimeInSeconds"] = max(1, math.ceil(self.training_end - start))
            # Billed time is time spent training: a spot job is not billed while interrupted.
            billed = self.run.training_seconds if self.run.spot else self.training_end - start
            out["BillableTimeInSeconds"] = max(1, math.ceil(billed))
        if self.warm_pool is not None:
            out["WarmPoolStatus"] = self.warm_pool.shape(now)
        return out

    def summary(self, now: float) -> dict[str, Any]:
        """A ListTrainingJobs TrainingJobSummary at `now`."""
        out: dict[str, Any] = {
            "TrainingJobName": self.name,
            "TrainingJobArn": self.arn,
            "CreationTime": self.created,
            "LastModifiedTime": self.last_modified,
            "TrainingJobStatus": self.status,
            "SecondaryStatus": self.secondary,
        }
        if self.training_end is not None:
            out["TrainingEndTime"] = self.training_end
        if self.warm_pool is not None:
            out["WarmPoolStatus"] = self.warm_pool.shape(now)
        return out
