"""Warm pools as the queue counts them: the instances SageMaker keeps after one of the queue's
attempts ends (managed warm pools, `ResourceConfig.KeepAlivePeriodInSeconds`).

An attempt whose training job ends with `WarmPoolStatus.Status` `Available` leaves a warm pool:
its instances stay provisioned, and billed, until a matching job reuses them (`Reused`), the
keep-alive period runs out, or someone ends it (`Terminated`). While it is available the queue
holds its instances in their pool, exactly as if a job ran there; a matching pending job may start
on them (scheduling/warm_pools.py).

Which jobs match is SageMaker's rule (domain/warm/warm_match.py); the queue keeps its digest per job
(`Job.warm_key`), set at submission, so a pass compares keys and never reads a request.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.placements.placement import pinned_request
from smq_lambda.domain.warm.warm_match import KEEP_ALIVE_MEMBER, keep_alive_seconds, may_use_warm_pool, warm_pool_key

REUSE_KEEP_ALIVE_S = 1
"""The keep-alive of a job that starts on a warm pool when nothing waits to reuse its instances
after it: SageMaker reuses a warm pool only for a job that gives a keep-alive of its own, so the
queue shortens it to the least there is instead of removing it."""


@dataclass(frozen=True)
class WarmPool:
    """The instances the training job `training_job_name` (an attempt of the queue) keeps warm."""

    training_job_name: str
    pool: str
    instance_type: str
    count: int
    key: str
    """The matching digest of the request that left it (`warm_match.warm_pool_key`)."""
    available_until: datetime
    """When SageMaker ends it unless a job reuses it first: the attempt's end plus its keep-alive."""
    released: bool = False
    """The queue asked SageMaker to end it (KeepAlivePeriodInSeconds 0): its instances are on their
    way back, and no job may count on reusing it."""

    @property
    def demand(self) -> dict[str, int]:
        return {self.pool: self.count}

    def describe(self) -> str:
        return f"the warm pool {self.training_job_name} left ({self.count} × {self.instance_type})"


def warm_key_of(request: Mapping[str, Any]) -> str | None:
    """The job's matching digest when it can leave or reuse a warm pool: it may use one at all
    (one instance type, no groups, no preferences, not spot) and gives a keep-alive; else None."""
    if not may_use_warm_pool(request) or keep_alive_seconds(request) <= 0:
        return None
    return warm_pool_key(request)


def keep_alive_sent(request: Mapping[str, Any], ceiling: int | None) -> int | None:
    """The keep-alive the queue sends for `request` under the pass's `ceiling` (see
    `StartJob.keep_alive_s`): None, the request as submitted; else the request's own, at most the
    ceiling (0: the member is removed)."""
    if ceiling is None:
        return None
    return min(keep_alive_seconds(request), ceiling)


def with_keep_alive(request: dict[str, Any], sent: int | None) -> dict[str, Any]:
    """`request` (changed in place and returned) with the keep-alive `keep_alive_sent` chose."""
    if sent is None:
        return request
    resources = request.setdefault("ResourceConfig", {})
    if sent > 0:
        resources[KEEP_ALIVE_MEMBER] = sent
    else:
        resources.pop(KEEP_ALIVE_MEMBER, None)
    return request


def warm_pool_left(job: Job, attempt_number: int, training_job_name: str, ended_at: datetime) -> WarmPool | None:
    """The warm pool attempt `attempt_number` of `job` left when it ended at `ended_at` (its report
    says `Available`): the request as sent (pinned to its placement, with the keep-alive the queue
    sent) gives its instances, its key and how long it stays; None when that request keeps none."""
    attempt = job.attempt(attempt_number)
    if attempt is None:
        return None
    request = copy.deepcopy(dict(job.request))
    if attempt.placement is not None:
        request = pinned_request(request, attempt.placement)
    with_keep_alive(request, attempt.keep_alive_s)
    key, keep_alive = warm_key_of(request), keep_alive_seconds(request)
    if key is None:
        return None
    resources = request["ResourceConfig"]
    pool = attempt.placement.pool_name if attempt.placement is not None else resources["InstanceType"]
    return WarmPool(
        training_job_name=training_job_name,
        pool=pool,
        instance_type=resources["InstanceType"],
        count=int(resources.get("InstanceCount", 1)),
        key=key,
        available_until=ended_at + timedelta(seconds=keep_alive),
    )


@dataclass(frozen=True)
class WarmPoolTotals:
    """Every warm pool of the queue's attempts that has ended: how many, how many a job reused,
    and the instance-seconds they billed while warm."""

    retained: int = 0
    reused: int = 0
    retained_instance_s: int = 0
    """`ResourceRetainedBillableTimeInSeconds` times the instance count, summed."""

    @property
    def reuse_rate(self) -> float | None:
        """Warm pools reused per warm pool retained; None before any has ended."""
        return self.reused / self.retained if self.retained else None
