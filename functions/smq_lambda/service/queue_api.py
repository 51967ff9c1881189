"""The use cases behind the REST API, over the ports: submit, read, reprioritize, cancel, pools.

The API never starts or stops SageMaker jobs itself: it records what the user asked for with a
conditional write and kicks the scheduler (a message on its queue), whose next pass acts on it. A kick that
fails is logged by the trigger, not raised: the request is already durable, and the periodic
reconciliation pass acts on it. Nor does it ask SageMaker how pools are used: each pass publishes
what it measured, and `pools()` reads that. Every answer about a job places it (its position,
reason and estimated start) as service/job_positions.py does, and prices it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from smq_lambda.domain.access.access import UNRESTRICTED, AccessPolicy, AccessRules
from smq_lambda.domain.costs.costs import Prices, estimated_cost
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import TRAINING_JOB_NAME_MAX, TRAINING_JOB_NAME_PATTERN, Job
from smq_lambda.domain.jobs.states import TERMINAL_STATES, JobState
from smq_lambda.errors import JobConflict, JobNotFound, NotOwner, PolicyViolation, VersionConflict
from smq_lambda.governance.idle_scope import check_exemption
from smq_lambda.governance.limits import violations
from smq_lambda.governance.policy import Policy
from smq_lambda.pass_summary import PoolUsage
from smq_lambda.ports import ConfigSource, JobStore, PassSummaries, PolicySource, PriceSource, SchedulerTrigger
from smq_lambda.scheduling.plan_windows import in_force
from smq_lambda.service.job_positions import JobPositions, PositionedJob
from smq_lambda.service.pass_measures import pass_summary
from smq_lambda.service.pass_summary_reader import with_current_capacity
from smq_lambda.service.quotas import CurrentQuotas, current_quotas
from smq_lambda.service.submission import SubmissionPolicy, check_priority, last_finished_job_id, new_job
from smq_lambda.service.submission_tags import check_budget_override
from smq_lambda.service.timeline import TimelineAttempt, attempts_between
from smq_lambda.service.timeline_token import decode_timeline_token, encode_timeline_token

WRITE_ATTEMPTS = 3
"""A scheduler pass may write the same job between our read and our write (a new wait reason, a
start); re-reading and re-deciding a few times makes that race invisible to the caller."""


@dataclass(frozen=True)
class PositionedPage:
    jobs: list[PositionedJob]
    next_token: str | None


@dataclass(frozen=True)
class AttemptPage:
    attempts: list[TimelineAttempt]
    next_token: str | None


@dataclass(frozen=True)
class CurrentPools:
    """Usage per pool as the last scheduling pass measured it, under today's capacities."""

    pools: list[PoolUsage]
    measured_at: datetime | None
    """When the pass measured it; None before any pass published (counted from the table then)."""
    spot_rates: Mapping[str, float] = field(default_factory=dict)
    """Per instance type, the spot interruptions per hour the last pass decided with."""


class AccessRulesSource(Protocol):
    def load(self) -> AccessRules:
        """The rules in force now (hot-reloaded; the fallback rules while the configured ones are invalid)."""
        ...


class _NoRules:
    """No access rules configured: every caller may use every priority and every allowed role."""

    def load(self) -> AccessRules:
        return UNRESTRICTED


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _new_id() -> str:
    return uuid.uuid4().hex


class QueueService:
    """What the API can do to the queue. Dependencies are injected so tests can use fakes or moto."""

    def __init__(
        self,
        store: JobStore,
        config: ConfigSource,
        trigger: SchedulerTrigger,
        *,
        policy: SubmissionPolicy | None = None,
        admin_principals: Collection[str] = frozenset(),
        access_rules: AccessRulesSource | None = None,
        pass_summaries: PassSummaries | None = None,
        governance: PolicySource | None = None,
        prices: PriceSource | None = None,
        clock: Callable[[], datetime] = _utcnow,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        """`admin_principals` are patterns (domain/access/principals.py) of callers that may act on any job,
        bound by no access rule. `pass_summaries` is where scheduling passes publish their summaries
        (pool usage among them); without one (or before the first pass) `pools()` counts the table's
        jobs alone.
        `governance` is the policy whose tags and limits every submission must keep; None: no policy.
        `prices` price each job's estimated cost; None: every job is unpriced."""
        self._store = store
        self._config = config
        self._trigger = trigger
        self._policy = policy or SubmissionPolicy()
        self._admins = tuple(admin_principals)
        self._access_rules = access_rules or _NoRules()
        self._pass_summaries = pass_summaries
        self._governance = governance
        self._prices = prices
        self._clock = clock
        self._new_id = new_id
        self._positions = JobPositions(store, config, pass_summaries)

    def submit(self, request: object, caller: str) -> PositionedJob:
        """Queue a CreateTrainingJob request owned by `caller` (InvalidRequest, PolicyViolation,
        AccessDenied, JobConflict). Its team tag value is registered for the scheduler's team fronts
        only while quotas are configured, where unknown values are refused, so the registry stays bounded."""
        config = self._config.load()
        job = new_job(
            request,
            owner=caller,
            config=config,
            policy=self._policy,
            now=self._clock(),
            job_id=self._new_id(),
        )
        governance = self._governance.load() if self._governance is not None else Policy()
        if broken := violations(job.request, governance):
            raise PolicyViolation([(violation.field, violation.rule, violation.message) for violation in broken])
        check_exemption(job.request, caller, governance.idle)
        access = self._access()
        access.check_submission(caller, priority=job.priority, role_arn=job.request["RoleArn"])
        check_budget_override(job, caller, access)
        stored = self._store.create(job, register_team=config.teams.enabled)
        self._trigger.kick(f"{stored.name} submitted")
        return self._positioned(stored)

    def last_finished_job_id(self, name: object) -> str | None:
        """See submission.last_finished_job_id; None for a name no job can have."""
        holder = self._store.get(name) if isinstance(name, str) and TRAINING_JOB_NAME_PATTERN.fullmatch(name) else None
        return last_finished_job_id(holder)

    def get(self, name: str, job_id: str | None = None) -> PositionedJob:
        """The newest job of the name; with `job_id`, that job: the newest or an earlier one of the
        name (kept until its TTL, listed in the newest one's `earlier_job_ids`)."""
        return self._positioned(self._load(name, job_id))

    def check_may_read_request(self, job: Job, caller: str) -> None:
        """A request may carry secrets (`Environment`, `HyperParameters`): only the job's owner or an
        admin reads it back, under the rule that lets them change the job."""
        if not self._access().may_change(job.owner, caller):
            raise NotOwner(job.name, caller, action="read the request of job")

    def list_jobs(
        self,
        *,
        states: Collection[JobState],
        pool: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
    ) -> PositionedPage:
        """One page in scheduling order; positions cost one index query per pending job and pool it
        waits in. With `owner`, the store reads that owner's jobs only, however many others the
        states hold."""
        page = self._store.list_jobs(states=states, pool=pool, owner=owner, limit=limit, next_token=next_token)
        placed = self._positions.of_each(page.jobs)
        prices = self._prices_in_force()
        return PositionedPage(jobs=[self._priced(entry, prices) for entry in placed], next_token=page.next_token)

    def change_priority(self, name: str, priority: object, caller: str) -> PositionedJob:
        """New priority for an unfinished job; the next pass re-sorts the pool (and may preempt).
        The job's history records who changed it. A priority above the caller's cap is AccessDenied."""
        value = check_priority(priority)
        access = self._access()

        def reprioritized(job: Job, now: datetime) -> Job:
            access.check_priority(caller, value)
            return job if job.priority == value else lifecycle.reprioritize(job, now, value, by=caller)

        job, changed = self._update(name, caller, reprioritized, access)
        if changed:
            self._trigger.kick(f"priority of {name} changed to {value}")
        return self._positioned(job)

    def cancel(self, name: str, caller: str) -> PositionedJob:
        """Pending jobs end at once; a live attempt is marked `stopping` and the pass stops it."""
        job, changed = self._update(name, caller, lambda job, now: _cancelled(job, now, caller), self._access())
        if changed:
            self._trigger.kick(f"{name} cancelled")
        return self._positioned(job)

    def attempts_between(
        self, start: datetime, end: datetime | None = None, *, limit: int, next_token: str | None = None
    ) -> AttemptPage:
        """One page of the attempts overlapping [start, end], for anyone who may read the queue
        (service/timeline.py); `next_token` continues a listing of the same range."""
        resume = decode_timeline_token(next_token) if next_token else None
        page = attempts_between(self._store, start, end, self._clock(), limit=limit, resume=resume)
        return AttemptPage(page.attempts, None if page.next is None else encode_timeline_token(page.next))

    def pools(self) -> CurrentPools:
        """Every configured pool, plus any instance type that live jobs use without a pool, as the
        last pass measured them (before the first pass: counted from the table by key), and the
        jobs pending in each now (one Select=COUNT Query per pool). A training plan's pool holds its
        instances only while a window is open (scheduling/plan_windows.py)."""
        config = in_force(self._config.load(), self._clock())
        summary = self._pass_summaries.latest() if self._pass_summaries is not None else None
        measured_at = None if summary is None else summary.measured_at
        held = self._store.in_use()
        if summary is None:
            summary = pass_summary(held.live, held.outside, config, self._clock(), {})
        measures = with_current_capacity(summary, config)
        shown = {measure.pool for measure in measures}
        pools = [
            PoolUsage(
                measure.pool,
                measure.capacity,
                measure.in_use,
                self._store.count_pending(measure.pool),
                measure.head,
                measure.warm,
            )
            for measure in measures
        ]
        for pool in sorted(held.pools - shown):
            pending = self._store.count_pending(pool)
            if pending:
                pools.append(PoolUsage(pool, config.capacity(pool), 0, pending))
        spot_rates = {} if measured_at is None else summary.spot_rates
        return CurrentPools(pools=pools, measured_at=measured_at, spot_rates=spot_rates)

    def quotas(self) -> CurrentQuotas:
        """Each team's share of each pool (service/quotas.py): what the last pass measured, under
        the quotas and capacities configured now, and the pending jobs counted now. Before the first
        pass, or while the last pass summary predates the quotas, what the live jobs hold is counted
        from the table by key (`measured_at` None)."""
        config = self._config.load()
        summary = self._pass_summaries.latest() if self._pass_summaries is not None else None
        measured_at = None if summary is None else summary.measured_at
        if not config.teams.enabled:
            return CurrentQuotas(teams=[], team_tag=config.teams.tag, measured_at=measured_at)
        if summary is None or not summary.teams:
            held = self._store.in_use()
            summary, measured_at = pass_summary(held.live, held.outside, config, self._clock(), {}), None
        pools = {measure.pool: measure.capacity for measure in with_current_capacity(summary, config)}
        return current_quotas(summary, pools, config, self._store, measured_at)

    def _load(self, name: str, job_id: str | None = None) -> Job:
        # A name that could never have been queued is unknown without asking the table, which would
        # refuse some of them (empty or oversized keys) with an error instead of "not found".
        if len(name) > TRAINING_JOB_NAME_MAX or not TRAINING_JOB_NAME_PATTERN.fullmatch(name):
            raise JobNotFound(name)
        job = self._store.get(name) if job_id is None else self._store.get(name, job_id=job_id)
        if job is None:
            raise JobNotFound(name)
        return job

    def _access(self) -> AccessPolicy:
        return AccessPolicy(admins=self._admins, rules=self._access_rules.load())

    def _update(
        self, name: str, caller: str, change: Callable[[Job, datetime], Job], access: AccessPolicy
    ) -> tuple[Job, bool]:
        """Apply `change` to an unfinished job the caller may act on: 404, then 403, then 409.

        Returns the job as stored and whether anything was written (`change` may return the job
        unchanged when there is nothing to do, or raise to refuse it).
        """
        for _ in range(WRITE_ATTEMPTS):
            job = self._load(name)
            if not access.may_change(job.owner, caller):
                raise NotOwner(name, caller)
            if job.state in TERMINAL_STATES:
                raise JobConflict(name, f"job {name!r} is already {job.state}: a finished job cannot be changed")
            updated = change(job, self._clock())
            if updated is job:
                return job, False
            try:
                return self._store.save(updated, expected_version=job.version), True
            except VersionConflict:
                continue
        raise VersionConflict(name)

    def _positioned(self, job: Job) -> PositionedJob:
        return self._priced(self._positions.of(job), self._prices_in_force())

    def _prices_in_force(self) -> Prices:
        return self._prices.load() if self._prices is not None else {}

    def _priced(self, entry: PositionedJob, prices: Prices) -> PositionedJob:
        return replace(entry, estimated_cost=estimated_cost(entry.job, prices))


def _cancelled(job: Job, now: datetime, caller: str) -> Job:
    if job.state is JobState.PENDING:
        return lifecycle.cancel_pending(job, now, by=caller)
    if job.state is JobState.STOPPING:
        return job
    return lifecycle.request_stop(job, now, preempt=False, reason=f"cancelled by {caller}; stopping")
