"""What a SageMaker status report does to a job under the governance policy — pure, so the rules
can be property-tested without AWS.

The governance rules have their say before the plain meaning of the status
(domain/jobs/training_status.py): a managed-spot attempt interrupted too often falls back to on-demand
(governance/spot.py), and so does a spot attempt SageMaker stopped at its MaxWaitTimeInSeconds
(fails with that reason when tagged `smq:spot-only`) — each only where the queue's on-demand pools
could hold the job, else it stays on spot or fails saying why — and a failed attempt is retried or
final as the failure classification says (governance/retry.py). This module orchestrates those
rules, so it sits above them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.jobs.training_status import apply_status
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.governance import notices
from smq_lambda.governance.actions import FailJob, FallBackToOnDemand, RetryAttempt, StayOnSpot
from smq_lambda.governance.notices import Notice, NoticeAction
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.retry import decide_failure
from smq_lambda.governance.spot import OnDemandCapacity, decide_max_wait, decide_spot_fallback


@dataclass(frozen=True)
class ReportEffect:
    """What a report does: the job's next value, the training job to stop once it is saved, and
    what to tell the job's owner once it is saved."""

    job: Job
    stop: str | None = None
    notice: Notice | None = None


def apply_report(
    job: Job,
    attempt_number: int,
    status: TrainingJobStatus,
    now: datetime,
    policy: Policy,
    on_demand: OnDemandCapacity,
) -> ReportEffect | None:
    """The effect of SageMaker reporting `status` for attempt `attempt_number` under `policy`, or
    None for no change: the governance rules first, then the status's plain meaning. `on_demand`:
    what the queue's configuration holds on demand, where a spot job may fall back."""
    attempt = job.current_attempt
    if attempt is None or attempt.number != attempt_number:
        return None
    governed = _governed(job, status, now, policy, on_demand)
    if governed is not None:
        return governed
    updated = apply_status(job, attempt_number, status, now)
    return None if updated is None else ReportEffect(updated)


def _governed(
    job: Job, status: TrainingJobStatus, now: datetime, policy: Policy, capacity: OnDemandCapacity
) -> ReportEffect | None:
    """The governance rules' effect; each rule answers only for a report about the job's open
    attempt while it starts or runs, so duplicates and late reports fall through to no change."""
    description = status.description()
    interrupted = decide_spot_fallback(job, description, policy, capacity)
    action = interrupted or decide_max_wait(job, status, capacity) or decide_failure(job, description, policy)
    if isinstance(action, StayOnSpot):
        return ReportEffect(lifecycle.stay_on_spot(job, now, reason=action.reason))
    if isinstance(action, FallBackToOnDemand):
        on_demand = lifecycle.fall_back_to_on_demand(job, now, request=action.request, reason=action.reason)
        notice = notices.about_job(on_demand, NoticeAction.SPOT_FALLBACK, action.reason)
        stop = action.training_job_name if action is interrupted else None
        return ReportEffect(on_demand, stop=stop, notice=notice)
    if isinstance(action, RetryAttempt):
        retried = lifecycle.retry_failed(job, now, reason=action.reason)
        return ReportEffect(retried, notice=notices.about_job(retried, NoticeAction.RETRY, action.reason))
    if isinstance(action, FailJob):
        return ReportEffect(lifecycle.finish(job, JobState.FAILED, now, outcome=action.outcome, reason=action.reason))
    return None
