"""Fault injection at the ports: every call the service makes to an AWS-backed port is counted, and
the N-th one fails the way its adapter can fail.

Three kinds of fault, each raising what the real adapter raises in that situation:

- `refused`: the call did nothing and said so with the adapter's typed error (throttling, an outage).
- `unexpected`: the call did nothing and raised an exception nobody planned for (a bug, a shape the
  adapter did not expect).
- `lost-answer`: the call took effect, then its answer was lost (a read timeout): the caller is told
  it failed although it happened. For reads this is the same as `refused`, so only writes get it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from smq_lambda.errors import (
    ConfigError,
    ServiceUnavailable,
    StartOutcomeUnknown,
    StartRefused,
    TrainingServiceError,
)


class FaultKind(StrEnum):
    REFUSED = "refused"
    UNEXPECTED = "unexpected"
    LOST_ANSWER = "lost-answer"


READS = frozenset(
    {
        "store.get",
        "store.active_jobs",
        "store.pending_in_pool",
        "store.list_jobs",
        "training.describe",
        "training.external_usage",
        "config.load",
        "policy.load",
        "usage.latest",
    }
)
"""Calls that change nothing: losing their answer is no different from a refusal."""

SAGEMAKER_OPERATIONS = {
    "start_attempt": "CreateTrainingJob",
    "stop": "StopTrainingJob",
    "describe": "DescribeTrainingJob",
    "external_usage": "ListTrainingJobs",
}


def kinds_for(call: str) -> tuple[FaultKind, ...]:
    """The faults worth injecting into `call` ("port.method")."""
    if call in READS:
        return (FaultKind.REFUSED, FaultKind.UNEXPECTED)
    return tuple(FaultKind)


def injected_error(call: str, kind: FaultKind) -> Exception:
    """What the adapter behind `call` raises for a fault of `kind`."""
    port, _, method = call.partition(".")
    if kind is FaultKind.UNEXPECTED:
        return RuntimeError(f"injected: {call} failed unexpectedly")
    timeout = kind is FaultKind.LOST_ANSWER
    if port == "training":
        if method == "start_attempt":
            if timeout:
                return StartOutcomeUnknown("injected: read timeout on CreateTrainingJob")
            return StartRefused("ThrottlingException: Rate exceeded (injected)", lasting=False)
        code = "ReadTimeoutError" if timeout else "ThrottlingException"
        return TrainingServiceError(SAGEMAKER_OPERATIONS.get(method, method), code, "injected")
    if port == "config":
        return ConfigError("injected: SSM parameter could not be read")
    if port == "policy":
        return ServiceUnavailable("SSM", "ThrottlingException", "injected: the policy parameter could not be read")
    code = "ReadTimeoutError" if timeout else "ProvisionedThroughputExceededException"
    return ServiceUnavailable("DynamoDB", code, f"injected into {call}")


@dataclass
class FaultPlan:
    """Counts the calls of every port wrapped with it, in order, and fails call number `at` (1-based)
    once with `kind`. With `at` None it only counts: the fault-free run that sizes the others."""

    at: int | None = None
    kind: FaultKind = FaultKind.REFUSED
    armed: bool = True
    """Disarmed, calls are neither counted nor failed (the checks after the scenario)."""
    calls: list[str] = field(default_factory=list)
    fired: str | None = None
    """The call that failed, once it has."""

    def call(self, name: str, perform: Callable[[], Any]) -> Any:
        if not self.armed:
            return perform()
        self.calls.append(name)
        if len(self.calls) != self.at:
            return perform()
        self.fired = name
        if self.kind is FaultKind.LOST_ANSWER:
            perform()
        raise injected_error(name, self.kind)


class FaultyPort:
    """A port whose public methods go through a FaultPlan under the name "port.method"."""

    def __init__(self, port: str, target: Any, plan: FaultPlan) -> None:
        self._port = port
        self._target = target
        self._plan = plan

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if name.startswith("_") or not callable(attribute):
            return attribute

        @functools.wraps(attribute)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._plan.call(f"{self._port}.{name}", lambda: attribute(*args, **kwargs))

        return call
