"""The budget hold: a team whose budget's action is `hold` starts a job only while what it has
spent and committed this month, plus the job's estimated cost, stays within the budget.

Rule. A pending job of team T (its team tag's value) under a `hold` budget of B dollars a month
starts only while

    spent + committed + estimate <= B

where `spent` is T's recorded spend this UTC month (the cost records' day totals, ended attempts),
`committed` is what T's live jobs will cost: a starting or running job its estimated cost, or what
it has accrued when that is more (it overran its estimate); a job being stopped what it has
accrued; and the estimate of each job this pass already admitted for T. `estimate` is the job's own
estimated cost (`domain.costs.costs.estimated_cost`: its expected duration, else its MaxRuntimeInSeconds
as a ceiling, times its instances' price) at the placement it would start at: a flexible job's
placements are priced one by one, and a placement the budget does not cover (or has no price) is
never chosen; the job is held only when none is covered. So a team's month ends at most the estimate error of
its running jobs above its budget, and never above it when their estimates are ceilings.

* A held job is explained (its reason names the budget, the spend, what is left and the reset
  date) and blocks nothing: other teams' jobs and its own team's later jobs that fit go on, as
  with the gates (`gates`). It is re-decided every pass, so a raised budget, a new month or an
  ended job lets it start at the next pass.
* Running jobs are never stopped for a budget.
* A job tagged `smq:budget-override` = `true` (only an admin may submit one) is never held; what
  it costs still counts against its team.
* Unpriced types never count as free: a job of a held team that uses an instance type with no
  price is held, its reason naming the type. Live jobs on unpriced types add nothing (their cost
  is unknown, as it is to the cost records once they end).
* `warn` budgets and teams without a budget are never held (see service/budget_warnings.py).

Pure: a `BudgetBook` is built per pass from the snapshot and dropped with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.costs.budgets import Budget, BudgetAction, next_month_start
from smq_lambda.domain.costs.cost_totals import cost_groups
from smq_lambda.domain.costs.costs import CostEstimate, Prices, accrued_cost, estimated_cost
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.scheduling.features import Feature, PassInputs
from smq_lambda.scheduling.holds import Held, HoldKind
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.snapshot import Snapshot

ENDING_STATES = frozenset({JobState.PREEMPTING, JobState.STOPPING})
"""Live jobs on their way out: they cost what they have accrued, not their whole estimate."""


def budget_team(job: Job) -> str:
    """The team a job's spend counts under, and so the budget it is held by."""
    return cost_groups(job, ())["team"]


@dataclass(frozen=True)
class BudgetHold:
    """Why a job is held: its team's hold budget, what the team has spent and committed, and the
    job's estimate (None exactly when it uses `unpriced` types, which have no price)."""

    team: str
    monthly_usd: float
    spent_usd: float
    committed_usd: float
    estimate: CostEstimate | None
    unpriced: tuple[str, ...]
    resets_at: datetime

    @property
    def left_usd(self) -> float:
        return self.monthly_usd - self.spent_usd - self.committed_usd

    def short_reason(self) -> str:
        """Why one placement of a flexible job is not used: the budget, what is left, its cost there."""
        left = f"{_usd(max(self.left_usd, 0.0))} left of team {self.team}'s hold budget"
        if self.estimate is None:
            return f"{left}, and {', '.join(self.unpriced)} has no price (unpriced types never count as free)"
        bound = "at most " if self.estimate.ceiling else ""
        return f"{left}, and it would cost {bound}{_usd(self.estimate.usd)} here"

    def reason(self) -> str:
        """What the job's reason says: the word budget, the budget, the spend, what is left, the reset."""
        standing = (
            f"team {self.team}'s hold budget of {_usd(self.monthly_usd)} a month has {_usd(max(self.left_usd, 0.0))} "
            f"left ({_usd(self.spent_usd)} spent this month, {_usd(self.committed_usd)} committed to its running and starting jobs)"
        )
        if self.estimate is None:
            why = (
                f"this job's cost is unknown: {', '.join(self.unpriced)} "
                f"{'has' if len(self.unpriced) == 1 else 'have'} no price, and unpriced types never count as free"
            )
        else:
            bound = "at most " if self.estimate.ceiling else ""
            why = f"this job is estimated at {bound}{_usd(self.estimate.usd)}"
        return (
            f"held by budget: {standing}; {why}. It starts when the budget allows (a raised budget, or the "
            f"reset on {self.resets_at:%Y-%m-%d %H:%M} UTC), or when an admin tags it smq:budget-override=true"
        )


class BudgetBook:
    """What each team under a hold budget has spent and committed, as a pass goes: built from the
    snapshot, then every job the pass admits is committed to it."""

    def __init__(
        self,
        budgets: Mapping[str, Budget],
        spent: Mapping[str, float],
        prices: Prices,
        live: Iterable[Job],
        now: datetime,
    ) -> None:
        self._budgets = {team: budget for team, budget in budgets.items() if budget.action is BudgetAction.HOLD}
        self._spent = spent
        self._prices = prices
        self._now = now
        self._committed: dict[str, float] = {}
        for job in live:
            if budget_team(job) in self._budgets:
                self._add(job, _live_cost(job, now, prices))

    @classmethod
    def of(cls, snapshot: Snapshot, now: datetime, budgets: Mapping[str, Budget]) -> BudgetBook:
        """The book of a pass over `snapshot`; holds nothing when the snapshot knows no spend."""
        live = (job for job in snapshot.jobs if job.is_live)
        if snapshot.team_spend is None:
            return cls({}, {}, snapshot.prices, (), now)
        return cls(budgets, snapshot.team_spend, snapshot.prices, live, now)

    def may_hold(self, job: Job) -> bool:
        """`job`'s team has a hold budget and the job no override: `hold` may hold it."""
        return bool(self._budgets) and not job.budget_override and budget_team(job) in self._budgets

    def hold(self, job: Job, at: Placement | None = None) -> BudgetHold | None:
        """Why `job` may not start now under its team's budget, priced at placement `at` (a flexible
        job's, each in turn while the pass places it); None when it may."""
        team = budget_team(job)
        budget = self._budgets.get(team)
        if budget is None or job.budget_override:
            return None
        estimate = estimated_cost(job, self._prices, at=at)
        spent, committed = self._spent.get(team, 0.0), self._committed.get(team, 0.0)
        if estimate is not None and spent + committed + estimate.usd <= budget.monthly_usd:
            return None
        types = job.where.instance_types if at is None else {at.instance_type: at.count}
        unpriced = tuple(sorted(pool for pool in types if pool not in self._prices))
        return BudgetHold(team, budget.monthly_usd, spent, committed, estimate, unpriced, next_month_start(self._now))

    def commit(self, job: Job, at: Placement | None = None) -> None:
        """`job` starts in this pass (at placement `at`): its estimate counts against its team from now on."""
        if budget_team(job) in self._budgets:
            estimate = estimated_cost(job, self._prices, at=at)
            self._add(job, estimate.usd if estimate is not None else None)

    def _add(self, job: Job, usd: float | None) -> None:
        if usd is not None:
            team = budget_team(job)
            self._committed[team] = self._committed.get(team, 0.0) + usd


def _live_cost(job: Job, now: datetime, prices: Prices) -> float | None:
    """What a live job will cost by the time it ends, as far as the pass can tell."""
    accrued = accrued_cost(job, now, prices)
    if accrued is None or job.state in ENDING_STATES:
        return accrued
    estimate = estimated_cost(job, prices)
    return accrued if estimate is None else max(accrued, estimate.usd)


def _usd(value: float) -> str:
    return f"${value:,.2f}"


class BudgetHoldFeature(Feature):
    """The hold budgets in the pass: its own book of what each team has spent and committed, a gate
    that holds a job its team's budget does not cover at a placement, and each start committed."""

    def __init__(self) -> None:
        self.book: BudgetBook | None = None

    def prepare(self, inputs: PassInputs) -> PassInputs:
        self.book = BudgetBook.of(inputs.snapshot, inputs.now, inputs.config.budgets)
        return inputs

    def gate(self, state: PassState, job: Job, placement: Placement | None) -> Held | None:
        if self.book is None or not self.book.may_hold(job):
            return None
        held = self.book.hold(job, placement)
        return None if held is None else Held(HoldKind.BUDGET, held.reason(), brief=held.short_reason())

    def admitted(self, state: PassState, job: Job, placement: Placement | None) -> None:
        if self.book is not None:
            self.book.commit(job, placement)
