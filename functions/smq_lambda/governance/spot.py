"""Managed spot: falling back to on-demand after too many interruptions, or when SageMaker stopped
a spot attempt at its MaxWaitTimeInSeconds.

SageMaker restarts an interrupted spot job itself, from its checkpoints, as long as spot capacity
comes back; at busy times every restart is interrupted again and the job makes no progress. So an
attempt interrupted more than `spot_interruption_limit` times is stopped and its job queued again
on demand: the same request with `EnableManagedSpotTraining` false and `MaxWaitTimeInSeconds`
(a spot-only member) removed, every other member kept, the checkpoint location included, so the
next attempt resumes where the last checkpoint left it. The on-demand request replaces the stored
one, so the job never goes back to spot, and it waits in the queue like any other attempt.

A spot attempt SageMaker stopped at its MaxWaitTimeInSeconds (`MaxWaitTimeExceeded`) falls back
the same way when its job allows on demand (domain/placements/purchase.py); a job tagged `smq:spot-only` ends
failed with that reason instead.

A job falls back only where the queue could ever start it on demand (`OnDemandCapacity`): some
placement of it fits its on-demand pools, each configured to hold at least its instances, or an
unpooled type while unpooled types are unlimited, and each within what the job's team may ever
hold there (its quota and what it may borrow). Elsewhere (`"pools": {T: 0}` beside
`"spot": {"pools": {T: 8}}`) the job would wait on demand for good beside free spot instances, so
this queue runs it as spot only: an interrupted attempt stays on spot, its reason and history saying
why (once per attempt), and one stopped at its MaxWaitTimeInSeconds ends failed as a `smq:spot-only`
job does, its reason naming the missing capacity (queued again on spot with the same
MaxWaitTimeInSeconds it could be stopped the same way without end; its checkpoints stay for a
resubmission).

Interruptions are counted from SageMaker's own reports: the `Interrupted` entries of the attempt's
`SecondaryStatusTransitions`, the full history, so duplicate or late reports count nothing twice.
Each rule answers only for the job's open attempt while it starts or runs, so a duplicate or late
report of a stop it acted on already does nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from smq_lambda.domain.config.teams import Teams, named
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import SPOT_MEMBER, SPOT_ONLY_STOPPING_MEMBER
from smq_lambda.domain.placements.purchase import purchase_of
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.governance.actions import FailJob, FallBackToOnDemand, StayOnSpot
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.untyped_fields import is_int, member, reported_running_attempt

INTERRUPTED = "Interrupted"
MAX_WAIT_TIME_EXCEEDED = "MaxWaitTimeExceeded"
STOPPED = "Stopped"
IN_PROGRESS = "InProgress"


@dataclass(frozen=True)
class OnDemandCapacity:
    """What the queue's configuration holds on demand: instances per pool (`pools`; the spot pools,
    `<type>:spot`, are never asked about), whether an instance type without a pool runs unlimited
    (`SMQ_UNPOOLED=unlimited`) or not at all, and the teams' quotas: a team's job may never hold
    more of a pool than its team's reach (`Teams.reach`)."""

    pools: Mapping[str, int]
    unpooled_unlimited: bool = False
    teams: Teams = field(default_factory=Teams)

    def shortage(self, demand: Mapping[str, int], team: str | None = None) -> str | None:
        """Why `demand` (instances per pool) of a job tagged `team` could never start on demand,
        even in empty pools; None when it could."""
        group = self.teams.team_of(team)  # without quotas every pool is the unassigned group's
        for pool, count in demand.items():
            if pool not in self.pools:
                if not self.unpooled_unlimited:
                    return f"{pool} has no on-demand capacity here (no pool, and unpooled types are rejected)"
            elif self.pools[pool] < count:
                return f"{pool} has no on-demand capacity here (pool of {self.pools[pool]} instances, it needs {count})"
            elif (reach := self.teams.reach(group, pool, self.pools[pool])) is not None and reach < count:
                return (
                    f"{pool} has no on-demand capacity for {named(group)} ({reach} instances at most, it needs {count})"
                )
        return None


def on_demand_shortage(job: Job, capacity: OnDemandCapacity) -> str | None:
    """Why none of `job`'s placements (a flexible job's preferences, else what it runs on) could ever
    start on demand, for the first; None when one could."""
    demands: list[Mapping[str, int]] = [placement.demand for placement in job.placements] or [job.where.instance_types]
    shortages = [capacity.shortage(demand, job.team) for demand in demands]
    return None if None in shortages else shortages[0]


def interruptions(description: Mapping[str, Any]) -> int:
    """How often SageMaker interrupted the training job, from its secondary status history."""
    transitions = description.get("SecondaryStatusTransitions")
    if not isinstance(transitions, list):
        return 0
    return sum(1 for transition in transitions if member(transition, "Status") == INTERRUPTED)


def is_spot(request: Mapping[str, Any]) -> bool:
    return request.get(SPOT_MEMBER) is True


def on_demand_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """`request` on demand: a deep copy with only the two spot members changed; `request` is untouched."""
    on_demand = copy.deepcopy(dict(request))
    on_demand[SPOT_MEMBER] = False
    stopping = on_demand.get("StoppingCondition")
    if isinstance(stopping, dict):
        stopping.pop(SPOT_ONLY_STOPPING_MEMBER, None)
    return on_demand


def decide_spot_fallback(
    job: Job, description: Mapping[str, Any], policy: Policy, on_demand: OnDemandCapacity
) -> FallBackToOnDemand | StayOnSpot | None:
    """Fall back to on-demand when the job's running spot attempt (the one `description` is about)
    has been interrupted more than the policy allows; None otherwise, and always for a job tagged
    `smq:spot-only`, which never runs on demand (SageMaker goes on restarting it on spot). Where
    `on_demand` could never hold the job it stays on spot instead, once its reason says so (a
    starting job first becomes running, by the report's plain meaning)."""
    attempt = reported_running_attempt(job, description, IN_PROGRESS)
    if attempt is None:
        return None
    count, limit = interruptions(description), policy.spot_interruption_limit
    if not is_spot(job.request) or count <= limit or not purchase_of(job.request).allows_on_demand:
        return None
    shortage = on_demand_shortage(job, on_demand)
    if shortage is None:
        why = f"attempt {attempt.number} was interrupted {count} times (limit {limit})"
        return _fall_back(job, attempt.number, attempt.training_job_name, why)
    reason = (
        f"stays on spot: interrupted more than {limit} times (spot_interruption_limit {limit}), but {shortage}; "
        "SageMaker goes on restarting it on spot"
    )
    if job.reason == reason or job.state is not JobState.RUNNING:
        return None
    return StayOnSpot(job.name, attempt.number, reason)


def _fall_back(job: Job, attempt: int, training_job_name: str, why: str) -> FallBackToOnDemand:
    checkpoint = _checkpoint(job)
    resume = (
        f"resumes from its checkpoints in {checkpoint}"
        if checkpoint is not None
        else "starts over: the request has no CheckpointConfig"
    )
    reason = (
        f"spot fallback: {why}; queued again on demand ({SPOT_MEMBER} false, {SPOT_ONLY_STOPPING_MEMBER} removed) "
        f"and {resume}"
    )
    return FallBackToOnDemand(job.name, attempt, training_job_name, on_demand_request(job.request), reason)


def decide_max_wait(
    job: Job, status: TrainingJobStatus, on_demand: OnDemandCapacity
) -> FallBackToOnDemand | FailJob | None:
    """A spot attempt SageMaker stopped at its MaxWaitTimeInSeconds falls back to on demand when its
    job allows it and `on_demand` could hold it, else ends the job failed with that reason (not as
    stopped outside the queue); None for any other report, or a stop the queue asked for (a
    preemption or cancel landing at the same moment keeps its meaning)."""
    attempt = job.current_attempt
    if attempt is None or not attempt.is_open or attempt.training_job_name != status.name:
        return None
    if status.status != STOPPED or status.secondary_status != MAX_WAIT_TIME_EXCEEDED:
        return None
    if job.state not in (JobState.STARTING, JobState.RUNNING):
        return None
    limit = member(job.request.get("StoppingCondition"), SPOT_ONLY_STOPPING_MEMBER)
    waited = f" ({limit} s)" if is_int(limit) else ""
    exceeded = f"stopped by SageMaker: {SPOT_ONLY_STOPPING_MEMBER}{waited} exceeded"
    if not purchase_of(job.request).allows_on_demand:
        reason = (
            f"{exceeded}; a managed-spot job must finish, waits for spot capacity included, within it "
            f"(tagged smq:spot-only: never on demand)"
        )
        return FailJob(job.name, attempt.number, AttemptOutcome.MAX_WAIT_TIME_EXCEEDED, reason)
    shortage = on_demand_shortage(job, on_demand)
    if shortage is not None:
        checkpoint = _checkpoint(job)
        resubmit = (
            f"resubmit it to resume from its checkpoints in {checkpoint}"
            if checkpoint is not None
            else "a resubmission starts over: the request has no CheckpointConfig"
        )
        reason = f"{exceeded}; it cannot move on demand: {shortage}; {resubmit}"
        return FailJob(job.name, attempt.number, AttemptOutcome.MAX_WAIT_TIME_EXCEEDED, reason)
    why = f"SageMaker stopped attempt {attempt.number} at its {SPOT_ONLY_STOPPING_MEMBER}{waited}"
    return _fall_back(job, attempt.number, attempt.training_job_name, why)


def _checkpoint(job: Job) -> str | None:
    """Where the job's attempts checkpoint (every attempt shares its CheckpointConfig)."""
    checkpoint = member(job.request.get("CheckpointConfig"), "S3Uri")
    return checkpoint if isinstance(checkpoint, str) else None
