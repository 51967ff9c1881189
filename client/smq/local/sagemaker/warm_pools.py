"""SageMaker managed warm pools: the instances a finished job keeps for the next matching one.

As the developer guide ("Train Using SageMaker Managed Warm Pools") describes them:

- a job whose request gives `ResourceConfig.KeepAlivePeriodInSeconds` > 0 keeps its cluster
  `Available` for that long after it ends: completed, stopped after its cluster launched, or failed
  by an algorithm or client error (`AlgorithmError: ...`, `ClientError: ...`); a failure that may
  have harmed the cluster leaves its warm pool `Terminated`. Managed spot and instance-group jobs
  keep none (smq_lambda.domain.warm.warm_match.may_use_warm_pool);
- a new job that matches it (smq_lambda.domain.warm.warm_match) and itself gives a keep-alive period
  takes it over: the old job's pool becomes `Reused` (`ReusedByJob`), the new job's `InUse`, and
  the new job starts without provisioning;
- past its period, or when UpdateTrainingJob sets a period already over (0 ends it at once), the
  pool is `Terminated`;
- `ResourceRetainedBillableTimeInSeconds` is the wall-clock time it was retained.

Expiry is applied when the registry next looks (every API call does), so nothing runs on a timer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

AVAILABLE, IN_USE, REUSED, TERMINATED = "Available", "InUse", "Reused", "Terminated"
CLUSTER_SAFE_FAILURES = ("AlgorithmError", "ClientError")
"""FailureReason prefixes of failures that leave the cluster healthy, so its warm pool is kept."""


@dataclass
class WarmPool:
    """One job's `WarmPoolStatus`."""

    status: str
    retained_since: float | None = None
    retained_until: float | None = None
    reused_by: str | None = None

    def retain(self, now: float) -> None:
        self.status, self.retained_since = AVAILABLE, now

    def expire(self, keep_alive: int, now: float) -> None:
        """Past its keep-alive period an available pool is terminated, billed for exactly that period."""
        if self.status == AVAILABLE and self.retained_since is not None and now >= self.retained_since + keep_alive:
            self.status, self.retained_until = TERMINATED, self.retained_since + keep_alive

    def end_if_over(self, keep_alive: int, now: float) -> None:
        """A new keep-alive period (UpdateTrainingJob): one already over ends retention now."""
        if self.status == AVAILABLE and self.retained_since is not None and now >= self.retained_since + keep_alive:
            self.status, self.retained_until = TERMINATED, now

    def hand_over(self, job_name: str, now: float) -> None:
        self.status, self.retained_until, self.reused_by = REUSED, now, job_name

    def shape(self, now: float) -> dict[str, Any]:
        """The WarmPoolStatus member of DescribeTrainingJob and ListTrainingJobs."""
        out: dict[str, Any] = {"Status": self.status}
        if self.retained_since is not None:
            end = self.retained_until if self.retained_until is not None else now
            out["ResourceRetainedBillableTimeInSeconds"] = int(max(0.0, end - self.retained_since))
        if self.reused_by is not None:
            out["ReusedByJob"] = self.reused_by
        return out


def keeps_cluster(status: str, failure_reason: str | None, launched: bool) -> bool:
    """Whether a job that ended so leaves a healthy, launched cluster to keep warm."""
    if not launched:
        return False
    if status == "Failed":
        return (failure_reason or "").startswith(CLUSTER_SAFE_FAILURES)
    return True
