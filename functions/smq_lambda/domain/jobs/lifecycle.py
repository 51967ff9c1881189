"""Pure state changes of a job: each returns the next Job value, checked against the state machine.

Stores write the returned value conditionally on the version the change started from, so two
writers racing on one job cannot both win.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from smq_lambda.domain.jobs.model import (
    Attempt,
    Change,
    Job,
    attempt_name,
    new_attempt_nonce,
    with_attempt,
    with_change,
)
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState, check_transition
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import purchase_of
from smq_lambda.domain.warm.warm_pools import keep_alive_sent

BACKOFF_BASE = timedelta(seconds=15)
BACKOFF_MAX = timedelta(minutes=15)
_MAX_DOUBLINGS = (BACKOFF_MAX // BACKOFF_BASE).bit_length()
"""Doublings after which BASE * 2**n is past MAX: the exponent stops here, so no count overflows."""
GOVERNANCE = "governance"
"""Who made a change the governance policy decided (in a job's history)."""
SCHEDULER = "scheduler"
"""Who made a change a scheduling pass decided (in a job's history)."""


@dataclass(frozen=True)
class StartRetryLimits:
    """When a job whose starts SageMaker keeps refusing for transient reasons stops retrying.

    The job fails with the last reason after `max_refusals` refusals in a row, or once `max_duration`
    has passed since the first refusal of the streak, whichever comes first. At the backoff ceiling
    (15 minutes) 100 refusals take about a day, so by default both limits agree.
    """

    max_refusals: int = 100
    max_duration: timedelta = timedelta(hours=24)


DEFAULT_RETRY_LIMITS = StartRetryLimits()


def _advance(job: Job, target: JobState, now: datetime, **changes: Any) -> Job:
    """`job` in state `target`; back in the queue, a flexible job is listed under its first
    preference again (it may start at any of them)."""
    check_transition(job.state, target)
    if target is JobState.PENDING:
        changes.setdefault("demand", job.where.listed)
    return replace(job, state=target, version=job.version + 1, updated_at=now, **changes)


def _close_attempt(job: Job, now: datetime, outcome: AttemptOutcome, reason: str | None) -> tuple[Attempt, ...]:
    attempt = job.current_attempt
    if attempt is None or not attempt.is_open:
        return job.attempts
    closed = replace(attempt, ended_at=now, outcome=outcome, reason=reason)
    return (*job.attempts[:-1], closed)


def start(
    job: Job,
    now: datetime,
    *,
    reason: str,
    backfill: bool = False,
    nonce: str | None = None,
    placement: Placement | None = None,
    keep_alive_s: int | None = None,
) -> Job:
    """pending → starting, opening the next attempt. Its SageMaker name is fixed here, with a random
    `nonce` (given only where a test wants a fixed one), and recorded with the job's conditional
    write before anything asks SageMaker to create it, so every retry of the create uses the same
    name. Only the most recent attempts stay in full (see MAX_INLINE_ATTEMPTS); the numbering counts
    them all. The attempt records its placement, the pass's choice (`StartJob.placement`), and
    holds that placement's instances until its job is pending again and its training job has ended:
    a flexible job's chosen preference, a spot job's purchase option
    (scheduling/purchase_options.py), a pinned job's own type and count when none is given (a job of
    instance groups has none). `keep_alive_s`: the pass's keep-alive ceiling (`StartJob.keep_alive_s`);
    the attempt records the keep-alive it sends."""
    if placement is None and job.placements:
        raise ValueError(f"job {job.name}: a flexible job starts at a placement")
    placement = placement or job.own_placement
    if placement is not None and not job.placements and job.own_placement is None:
        raise ValueError(f"job {job.name}: a job of instance groups starts at no placement")
    number = job.next_attempt_number
    attempt = Attempt(
        number=number,
        training_job_name=attempt_name(job.name, new_attempt_nonce() if nonce is None else nonce, number),
        started_at=now,
        backfill=backfill,
        placement=placement,
        keep_alive_s=keep_alive_sent(job.request, keep_alive_s),
    )
    demand = job.demand if placement is None else placement.demand
    return _advance(with_attempt(job, attempt), JobState.STARTING, now, reason=reason, not_before=None, demand=demand)


def mark_running(job: Job, now: datetime) -> Job:
    return _advance(job, JobState.RUNNING, now, reason="training", start_failures=0)


def backoff(failures: int) -> timedelta:
    """The wait after the `failures`-th refusal in a row: doubling from BASE, at most MAX."""
    doublings = min(max(failures - 1, 0), _MAX_DOUBLINGS)
    return min(BACKOFF_BASE * 2**doublings, BACKOFF_MAX)


def refuse_start(
    job: Job, now: datetime, *, reason: str, lasting: bool, limits: StartRetryLimits = DEFAULT_RETRY_LIMITS
) -> Job:
    """SageMaker refused the attempt: a lasting refusal fails the job, a transient one backs off
    until the streak of refusals passes `limits`, which fails the job with the last reason."""
    attempts = _close_attempt(job, now, AttemptOutcome.REFUSED, reason)
    if lasting:
        return _advance(job, JobState.FAILED, now, attempts=attempts, reason=reason)
    failures = job.start_failures + 1
    if (
        failures >= limits.max_refusals
        or _streak_seconds(attempts, failures, now) >= limits.max_duration.total_seconds()
    ):
        gave_up = f"start refused {failures} times in a row; giving up: {reason}"
        return _advance(job, JobState.FAILED, now, attempts=attempts, reason=gave_up, start_failures=failures)
    delay = backoff(failures)
    return _advance(
        job,
        JobState.PENDING,
        now,
        attempts=attempts,
        reason=f"start refused ({reason}); retrying after {int(delay.total_seconds())} s",
        start_failures=failures,
        not_before=now + delay,
    )


def _streak_seconds(attempts: tuple[Attempt, ...], failures: int, now: datetime) -> float:
    """Seconds since the first of the job's last `failures` refusals (those since it last ran).

    Only the most recent attempts are kept in full (MAX_INLINE_ATTEMPTS). When the first refusals
    of the streak are no longer among them, each missing one is counted at the least time it can
    have taken (its backoff), so the age is never overstated and the job never fails early.
    Seconds, not a timedelta: any count of refusals fits.
    """
    kept = [attempt.ended_at for attempt in attempts if attempt.outcome == AttemptOutcome.REFUSED and attempt.ended_at][
        -failures:
    ]
    since_kept = (now - kept[0]).total_seconds() if kept else 0.0
    return since_kept + _least_seconds_of(failures - len(kept))


def _least_seconds_of(refusals: int) -> int:
    """The least time the first `refusals` refusals of a streak take: each waits out its backoff."""
    ramp = min(refusals, _MAX_DOUBLINGS)
    ramp_seconds = sum(int(backoff(n).total_seconds()) for n in range(1, ramp + 1))
    return ramp_seconds + (refusals - ramp) * int(BACKOFF_MAX.total_seconds())


def request_stop(job: Job, now: datetime, *, preempt: bool, reason: str, history: str | None = None) -> Job:
    """A stop was decided: preemption returns the job to the queue, a cancel ends it. `history`:
    a note the scheduler keeps in the job's history (how it is treated from now on). It replaces
    the ending an earlier stop set (a cancel of a job stopping for its plan's window ends it
    cancelled)."""
    target = JobState.PREEMPTING if preempt else JobState.STOPPING
    stopping = _advance(job, target, now, reason=reason, stop_outcome=None)
    return stopping if history is None else with_change(stopping, Change(at=now, by=SCHEDULER, what=history))


def preempt(job: Job, now: datetime, *, outcome: AttemptOutcome, reason: str, history: str | None = None) -> Job:
    """The queue stops the attempt and queues the job again (→ preempting); when the stop lands the
    attempt closes with `outcome` (`end_preemption`): PREEMPTED for a job of higher priority, or
    PLAN_WINDOW_CLOSED before a training plan's window ends. Only a PLAN_WINDOW_CLOSED is stored
    (`stop_outcome`): a preempting job without one, also of an earlier release, was preempted."""
    preempting = request_stop(job, now, preempt=True, reason=reason, history=history)
    return preempting if outcome is AttemptOutcome.PREEMPTED else replace(preempting, stop_outcome=outcome)


def end_preemption(job: Job, now: datetime) -> Job:
    """A `preempting` job's attempt has ended (SageMaker reports Stopped, or no longer knows it):
    it closes with the outcome its stop was for (`preempt`), and the job waits again."""
    outcome = job.stop_outcome or AttemptOutcome.PREEMPTED
    return replace(requeue(job, now, outcome=outcome, reason=job.reason or str(outcome)), stop_outcome=None)


def stop_for_governance(job: Job, now: datetime, *, outcome: AttemptOutcome, reason: str) -> Job:
    """A governance rule stops the attempt (an idle GPU): `stopping` like a cancel, but when the
    stop lands the job ends failed with `outcome` (see `end_stopped`), and never goes back to the
    queue. The job's history keeps the reason."""
    stopping = _advance(job, JobState.STOPPING, now, reason=reason, stop_outcome=outcome)
    return with_change(stopping, Change(at=now, by=GOVERNANCE, what=reason))


def warn_low_utilization(job: Job, now: datetime, *, reason: str) -> Job:
    """The owner is warned that the current attempt uses its GPUs little: not a state change, but a
    versioned write that marks the attempt warned (so it is warned once) and keeps the reason in
    the job's history."""
    attempt = job.current_attempt
    if attempt is None or not attempt.is_open:
        raise ValueError(f"job {job.name} has no open attempt to warn about")
    warned = replace(attempt, warned_at=now)
    changed = with_change(job, Change(at=now, by=GOVERNANCE, what=reason))
    return replace(changed, attempts=(*job.attempts[:-1], warned), version=job.version + 1, updated_at=now)


def end_stopped(job: Job, now: datetime) -> Job:
    """A `stopping` job's attempt has ended (SageMaker reports Stopped, or no longer knows it): a
    governance stop fails the job with its outcome, any other stop cancels it."""
    if job.stop_outcome is not None:
        return finish(job, JobState.FAILED, now, outcome=job.stop_outcome, reason=job.reason)
    return finish(job, JobState.CANCELLED, now, outcome=AttemptOutcome.STOPPED, reason=job.reason)


def requeue(job: Job, now: datetime, *, outcome: AttemptOutcome, reason: str) -> Job:
    """The attempt ended but the job goes on: back to pending with its original submission time."""
    return _advance(job, JobState.PENDING, now, attempts=_close_attempt(job, now, outcome, reason), reason=reason)


def retry_failed(job: Job, now: datetime, *, reason: str) -> Job:
    """An attempt failed for the infrastructure's reason: it closes as INFRASTRUCTURE_FAILURE (which
    counts the job's retries) and the job waits for its next attempt in its old place."""
    return requeue(job, now, outcome=AttemptOutcome.INFRASTRUCTURE_FAILURE, reason=reason)


def fall_back_to_on_demand(job: Job, now: datetime, *, request: Mapping[str, Any], reason: str) -> Job:
    """A managed-spot attempt was interrupted too often (or stopped at its MaxWaitTimeInSeconds):
    it closes as SPOT_FALLBACK and the
    job waits again with `request`, its on-demand version, which replaces the stored request (and
    the purchase option of its preferences) for good, so no later attempt of the job goes back to
    spot. The closed attempt keeps its placement: it holds its spot instances until it has stopped.
    The job's history keeps the reason after the queue's wait explanations have replaced it as the
    job's current reason."""
    requeued = requeue(job, now, outcome=AttemptOutcome.SPOT_FALLBACK, reason=reason)
    changed = with_change(requeued, Change(at=now, by=GOVERNANCE, what=reason))
    purchase = purchase_of(request)
    placements = tuple(replace(placement, spot=purchase.spot) for placement in job.placements)
    return replace(changed, request=request, purchase=purchase, placements=placements)


def stay_on_spot(job: Job, now: datetime, *, reason: str) -> Job:
    """A spot attempt interrupted too often goes on on spot: no on-demand pool of the queue could
    hold its job (governance/spot.py). Not a state change, but a versioned write of the job's reason,
    which its history keeps after the attempt ends."""
    changed = with_change(job, Change(at=now, by=GOVERNANCE, what=reason))
    return replace(changed, reason=reason, version=job.version + 1, updated_at=now)


def finish(job: Job, target: JobState, now: datetime, *, outcome: AttemptOutcome, reason: str | None) -> Job:
    return _advance(
        job, target, now, attempts=_close_attempt(job, now, outcome, reason), reason=reason, stop_outcome=None
    )


def cancel_pending(job: Job, now: datetime, *, by: str) -> Job:
    return _advance(job, JobState.CANCELLED, now, reason=f"cancelled by {by} before it started")


def explain(job: Job, now: datetime, reason: str) -> Job:
    """Record why a job waits; not a state change, but still a versioned write."""
    return replace(job, reason=reason, version=job.version + 1, updated_at=now)


def reprioritize(job: Job, now: datetime, priority: int, *, by: str) -> Job:
    """A new priority, recorded in the job's history with who set it (the pass re-sorts the pool)."""
    changed = with_change(job, Change(at=now, by=by, what=f"priority {job.priority} → {priority}"))
    return replace(changed, priority=priority, version=job.version + 1, updated_at=now)
