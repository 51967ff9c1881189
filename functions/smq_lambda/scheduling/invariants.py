"""What must hold after every pass, whatever features are on: one checker, run by the simulator
after every pass, by the property tests, and by the deployed pass on what it read (an
`InvariantViolations` metric, its alarm, and a log line naming each invariant broken).

It projects the state the pass leaves (the snapshot with the decision's starts and stops) and checks
it with plain arithmetic, never with the pass's own ledger, placement or budget book, so a defect
there cannot hide itself:

1. **No pool over capacity** (`pool-over-capacity`): per pool (in force at the pass's moment: a
   closed plan holds 0), the instances held by starting, running and stopping attempts at their
   placements, by warm pools still held and by training jobs outside the queue never exceed its
   capacity where the pass added any. (A pool that shrank under its running jobs is over capacity
   without any pass's fault: only a pass that starts more there breaks the rule.)
2. **One placement per live job** (`one-placement`): an attempt the pass starts, or that runs,
   holds one placement, that the pass counts (`Job.demand`), that is one of its job's own (a
   preference, or its type and count), on a purchase option its request allows, counted in the
   pool of that option (a spot pool for spot where the type has one, the plan's pool on a plan,
   else the type's), and that the request sent to SageMaker says (spot flag, training plan).
3. **Budgets kept** (`budget-kept`): a `hold` team that starts a job stays within its budget:
   its spend this month, what its live jobs will cost (at least what they accrued) and the
   estimates of the jobs started, at their placements; a start at an unpriced placement breaks it.
   So a team's month ends at most the estimate error of its running jobs above its budget.
4. **No idle wait** (`no-idle-wait`): no pending job waits while a placement it may use now has
   room for it (in every pool it needs, within its team's quota and beside the idle quota other
   teams reserve) and no earlier job waits for one of those pools, unless the pass set it aside by
   a named rule: its start backoff, its team's hold budget (held; a placement the budget does not
   cover, computed here from the spend and prices the pass read, is not one it may use).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from smq_lambda.domain.costs.budgets import BudgetAction
from smq_lambda.domain.costs.costs import accrued_cost, estimated_cost
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import RELEASING_STATES, JobState
from smq_lambda.domain.placements.placement import PLAN_MEMBER, SPOT_MEMBER, Placement, pinned_request
from smq_lambda.domain.placements.purchase import spot_pool
from smq_lambda.scheduling.actions import Action, ExplainWait, StartJob
from smq_lambda.scheduling.budget_hold import budget_team
from smq_lambda.scheduling.plan_windows import in_force
from smq_lambda.scheduling.purchase_options import offer
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot, UnpooledPolicy, held_warm_pools


class Invariant(StrEnum):
    POOL_OVER_CAPACITY = "pool-over-capacity"
    ONE_PLACEMENT = "one-placement"
    BUDGET_KEPT = "budget-kept"
    NO_IDLE_WAIT = "no-idle-wait"


@dataclass(frozen=True)
class Violation:
    invariant: Invariant
    subject: str
    """The pool, job or team the broken rule is about."""
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant} {self.subject}: {self.detail}"


def check_pass(
    snapshot: Snapshot,
    config: SchedulerConfig,
    actions: Sequence[Action],
    now: datetime,
    *,
    budget_held: Iterable[str] = (),
) -> list[Violation]:
    """Every invariant the state after `actions` (a pass over `snapshot` at `now`) breaks.
    `budget_held`: the jobs the pass set aside for their team's hold budget (`Decision.budget_held`)."""
    config = in_force(config, now)
    after = _After.of(snapshot, actions)
    return [
        *_pool_capacity(after, config),
        *_one_placement(after, config),
        *_budgets_kept(after, snapshot, config, now),
        *_no_idle_wait(after, snapshot, config, actions, now, frozenset(budget_held)),
    ]


@dataclass(frozen=True)
class _After:
    """The snapshot as the pass leaves it: who holds what, per pool, before and after its starts."""

    jobs: Mapping[str, Job]
    starts: Mapping[str, StartJob]
    held: Mapping[str, Mapping[str, int]]
    """Per live job (started ones included), the instances per pool it holds after the pass."""
    before: Counter[str]
    used: Counter[str]

    @classmethod
    def of(cls, snapshot: Snapshot, actions: Sequence[Action]) -> _After:
        jobs = {job.name: job for job in snapshot.jobs}
        starts = {action.job_name: action for action in actions if isinstance(action, StartJob)}
        warm = {pool.training_job_name: pool for pool in held_warm_pools(snapshot)}
        before: Counter[str] = Counter(snapshot.external_usage)
        for pool in warm.values():
            before.update(pool.demand)
        held: dict[str, Mapping[str, int]] = {}
        for job in snapshot.jobs:
            if job.is_live:
                held[job.name] = job.held
                before.update(job.held)
        used = Counter(before)
        for name, start in starts.items():
            job = jobs[name]
            held[name] = job.demand if start.placement is None else start.placement.demand
            used.update(held[name])
            reused = warm.pop(start.warm_pool, None) if start.warm_pool is not None else None
            if reused is not None:
                used.subtract(reused.demand)
        return cls(jobs, starts, held, before, used)


def _pool_capacity(after: _After, config: SchedulerConfig) -> list[Violation]:
    violations = []
    for pool in sorted(after.used):
        capacity = config.capacity(pool)
        used = after.used[pool]
        if capacity is not None and used > capacity and used > after.before[pool]:
            starts = sorted(name for name, held in after.held.items() if name in after.starts and pool in held)
            violations.append(
                Violation(
                    Invariant.POOL_OVER_CAPACITY,
                    pool,
                    f"{used} instances held of {capacity} after starting {', '.join(starts) or 'nothing'}",
                )
            )
    return violations


def _one_placement(after: _After, config: SchedulerConfig) -> list[Violation]:
    violations = []
    for name in sorted(after.held):
        job, start = after.jobs[name], after.starts.get(name)
        placement = start.placement if start is not None else job.where.selected
        if placement is None:
            if start is not None and len(job.demand) == 1:
                violations.append(Violation(Invariant.ONE_PLACEMENT, name, "started without a placement"))
            continue
        violations.extend(
            Violation(Invariant.ONE_PLACEMENT, name, f"{placement.describe()}: {problem}")
            for problem in _placement_problems(job, placement, config, started=start is not None)
        )
    return violations


def _placement_problems(job: Job, placement: Placement, config: SchedulerConfig, *, started: bool) -> list[str]:
    """What is wrong with `job` holding `placement` (nothing: [])."""
    problems = []
    if not started and dict(job.demand) != placement.demand:
        problems.append(f"the queue counts {dict(job.demand)}, not its placement")
    own = {(p.instance_type, p.count) for p in job.placements} or {(job.where.pool, job.where.instances)}
    if started and (placement.instance_type, placement.count) not in own:
        problems.append(f"not one of the job's own placements {sorted(own)}")
    if placement.spot and not job.purchase.spot:
        problems.append("spot, but the job's request is on demand")
    if not placement.spot and not job.purchase.allows_on_demand and placement.training_plan_arn is None:
        problems.append("on demand, but the job is spot only")
    expected_pool = _pool_of(placement, config)
    if expected_pool is None:
        problems.append(f"runs on training plan {placement.training_plan_arn}, which is not configured")
    elif placement.pool_name != expected_pool:
        problems.append(f"counted in {placement.pool_name}, but it runs in {expected_pool}")
    if job.request.get("ResourceConfig"):
        problems.extend(_request_problems(job.request, placement))
    return problems


def _pool_of(placement: Placement, config: SchedulerConfig) -> str | None:
    """The pool a placement's instances run in, by its purchase option and plan; None when the
    plan is not configured (a problem of its own)."""
    if placement.training_plan_arn is not None:
        plan = next((plan for plan in config.training_plans.values() if plan.arn == placement.training_plan_arn), None)
        return None if plan is None else plan.pool
    if placement.spot and config.spot is not None and placement.instance_type in config.spot.pools:
        return spot_pool(placement.instance_type)
    return placement.instance_type


def _request_problems(request: Mapping[str, Any], placement: Placement) -> list[str]:
    sent = pinned_request(request, placement)
    problems = []
    if (sent.get(SPOT_MEMBER) is True) != placement.spot:
        problems.append(f"the request sent has {SPOT_MEMBER} {sent.get(SPOT_MEMBER)}")
    if sent["ResourceConfig"].get(PLAN_MEMBER) != placement.training_plan_arn:
        problems.append(f"the request sent names training plan {sent['ResourceConfig'].get(PLAN_MEMBER)}")
    return problems


def _budgets_kept(after: _After, snapshot: Snapshot, config: SchedulerConfig, now: datetime) -> list[Violation]:
    violations: list[Violation] = []
    for team, (budget, committed) in sorted(_committed(after, snapshot, config, now).items()):
        started = [after.jobs[name] for name in sorted(after.starts) if _held_by(after.jobs[name], team)]
        violations.extend(
            Violation(Invariant.BUDGET_KEPT, team, f"{job.name} started unpriced")
            for job in started
            if estimated_cost(job, snapshot.prices, at=after.starts[job.name].placement) is None
        )
        if started and committed > budget + 1e-6:
            violations.append(
                Violation(
                    Invariant.BUDGET_KEPT,
                    team,
                    f"committed ${committed:,.2f} of a ${budget:,.2f} hold budget after starting "
                    f"{', '.join(job.name for job in started)}",
                )
            )
    return violations


def _committed(
    after: _After, snapshot: Snapshot, config: SchedulerConfig, now: datetime
) -> dict[str, tuple[float, float]]:
    """Per team under a `hold` budget, the budget and what the team has committed after the pass:
    its spend this month, what its live jobs will cost, and the started jobs' estimates at their
    placements. Empty when the snapshot knows no spend (no budget holds then)."""
    if snapshot.team_spend is None:
        return {}
    committed = {}
    for team, budget in config.budgets.items():
        if budget.action is not BudgetAction.HOLD:
            continue
        total = snapshot.team_spend.get(team, 0.0)
        for job in snapshot.jobs:
            if job.is_live and budget_team(job) == team:
                total += _live_cost(job, snapshot, now)
        for name, start in after.starts.items():
            job = after.jobs[name]
            if _held_by(job, team) and (estimate := estimated_cost(job, snapshot.prices, at=start.placement)):
                total += estimate.usd
        committed[team] = (budget.monthly_usd, total)
    return committed


def _held_by(job: Job, team: str) -> bool:
    """`job` counts against `team`'s hold budget and may be held by it."""
    return budget_team(job) == team and not job.budget_override


def _live_cost(job: Job, snapshot: Snapshot, now: datetime) -> float:
    """At least what a live job has accrued; its estimate while it starts or runs."""
    accrued = accrued_cost(job, now, snapshot.prices) or 0.0
    if job.state in RELEASING_STATES:
        return accrued
    estimate = estimated_cost(job, snapshot.prices)
    return accrued if estimate is None else max(accrued, estimate.usd)


def _no_idle_wait(
    after: _After,
    snapshot: Snapshot,
    config: SchedulerConfig,
    actions: Sequence[Action],
    now: datetime,
    budget_held: frozenset[str],
) -> list[Violation]:
    if not _any_room(after, config):
        return []  # the usual state of a busy queue: nobody can be waiting beside room
    explained = {action.job_name: action.reason for action in actions if isinstance(action, ExplainWait)}
    waiting = sorted(
        (
            job
            for job in snapshot.jobs
            if job.state is JobState.PENDING
            and job.name not in after.starts
            and job.name not in budget_held
            and (job.not_before is None or job.not_before <= now)
        ),
        key=lambda job: job.order,
    )
    budgets = _committed(after, snapshot, config, now)
    placements = {job.name: _options(job, snapshot, config, now) for job in waiting}
    first: dict[str, Job] = {}  # per pool, the earliest job waiting there (whatever its budget allows)
    waiters: Counter[str] = Counter()
    for job in waiting:
        pools = {pool for placement in placements[job.name] for pool in _demand(job, placement)}
        for pool in pools:
            first.setdefault(pool, job)
        waiters.update(pools)
    claims = _team_claims(after, config)
    aging = config.aging.per_hour > 0
    violations = []
    for job in waiting:
        for placement in placements[job.name]:
            if not _covered(job, placement, snapshot, budgets):
                continue
            option = _demand(job, placement)
            blocked = any(first[pool] is not job or (aging and waiters[pool] > 1) for pool in option)
            if blocked or not _has_room(job, option, after, claims, config):
                continue
            note = " (explained this pass)" if job.name in explained else ""
            violations.append(
                Violation(
                    Invariant.NO_IDLE_WAIT,
                    job.name,
                    f"waits beside room for {dict(option)} and no earlier job waits there{note}",
                )
            )
            break
    return violations


def _any_room(after: _After, config: SchedulerConfig) -> bool:
    """Some pool has an instance nobody holds (or no limit)."""
    if config.unpooled is UnpooledPolicy.UNLIMITED:
        return True
    return any(capacity > after.used[pool] for pool, capacity in config.pools.items())


def _demand(job: Job, placement: Placement | None) -> Mapping[str, int]:
    return job.demand if placement is None else placement.demand


def _options(job: Job, snapshot: Snapshot, config: SchedulerConfig, now: datetime) -> list[Placement | None]:
    """Each placement `job` may use now (its purchase options or preferences; None: its own demand,
    for instance groups)."""
    offered = offer(job, now, config.spot, snapshot.spot_rates).job if config.spot is not None else job
    return list(offered.placements) or [job.own_placement]


def _covered(
    job: Job, placement: Placement | None, snapshot: Snapshot, budgets: Mapping[str, tuple[float, float]]
) -> bool:
    """Its team's hold budget (if any) covers `job` at `placement`: a placement it does not may
    not be used, so waiting beside room there breaks no rule."""
    if not budgets or job.budget_override:
        return True
    team = budget_team(job)
    if team not in budgets:
        return True
    budget, committed = budgets[team]
    estimate = estimated_cost(job, snapshot.prices, at=placement)
    return estimate is not None and committed + estimate.usd <= budget + 1e-6


def _team_claims(after: _After, config: SchedulerConfig) -> Counter[tuple[str, str]]:
    claims: Counter[tuple[str, str]] = Counter()
    for name, held in after.held.items():
        team = config.teams.team_of(after.jobs[name].team)
        claims.update({(team, pool): count for pool, count in held.items()})
    return claims


def _has_room(
    job: Job, option: Mapping[str, int], after: _After, claims: Counter[tuple[str, str]], config: SchedulerConfig
) -> bool:
    """Every pool of `option` has the instances free, within `job`'s team's quota and beside the idle
    quota other teams reserve."""
    teams = config.teams
    team = teams.team_of(job.team)
    for pool, need in option.items():
        capacity = config.capacity(pool)
        if capacity is None:
            continue
        free = capacity - after.used[pool]
        if teams.enabled:
            quota = teams.quota(team, pool, capacity)
            if quota is not None and claims[team, pool] + need > quota:
                return False
            free -= sum(
                max((teams.quota(other, pool, capacity) or 0) - claims[other, pool], 0)
                for other in teams.names()
                if other != team and not teams.sharing(other).lends
            )
        if free < need:
            return False
    return True
