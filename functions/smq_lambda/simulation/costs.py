"""What a simulated run costs, and the team budgets applied to it as the live queue applies them.

Every attempt is priced when its instances are given back, by the live pricing (domain/costs/costs.py)
and summed per team (domain/costs/cost_totals.py). How SageMaker bills it, as the simulation models it:

- Billed time: from the moment the attempt's instances are ready (the timeline's `running_s`) for as
  long as they train, plus the stop of a preemption (SageMaker bills a stopping job until it has
  stopped). The start-up before `running_s` and the wait of an interrupted spot attempt for spot
  capacity are not billed.
- Spot: SageMaker bills managed spot training's time less its spot saving, which varies with the
  market; the simulation takes a fixed share off, `spot_discount` (default 0.7: AWS advertises
  managed spot training as saving "up to 90%" over on-demand, docs.aws.amazon.com/sagemaker/latest/
  dg/model-managed-spot-training.html; 70% is a middle of the savings it reports for GPU types).
- Waste: the training a stop or an interruption threw away (the run's `lost_work_s`, exact here: the
  simulation knows each job's checkpoints), at what the attempt paid per trained second.
- Unpriced: a type with no price prices nothing (`unpriced_attempts`), never $0.

The prices are the configuration document's `prices` over the shipped defaults of a region
(domain/costs/prices_in_force.py, no Price List refresh). Budgets: the run starts at a UTC month start
(replay EPOCH) and each team's spend of the month counts its ended attempts; the smq pass sees it
and the prices in its snapshot, so its hold rule (scheduling/budget_hold.py) holds jobs as it would
live. The baselines (fifo, seed) hold nothing: their spend per month is the workload's without
budgets.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from smq_lambda.domain.costs.budgets import Budget, month_start, next_month_start
from smq_lambda.domain.costs.cost_totals import CostFigures
from smq_lambda.domain.costs.costs import AttemptCost, Prices, attempt_cost, is_spot
from smq_lambda.domain.costs.default_prices import default_prices
from smq_lambda.domain.costs.prices_in_force import prices_in_force
from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.replay.timeline import Segment
from smq_lambda.replay.virtual_queue import EPOCH, PolicyFunction
from smq_lambda.scheduling.actions import Action
from smq_lambda.scheduling.budget_hold import budget_team
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.simulation.policies import SmqPass

DEFAULT_SPOT_DISCOUNT = 0.7
TIMELINE_OUTCOMES = {
    "completed": AttemptOutcome.COMPLETED,
    "preempted": AttemptOutcome.PREEMPTED,
    "plan_window_closed": AttemptOutcome.PLAN_WINDOW_CLOSED,
    "spot_fallback": AttemptOutcome.SPOT_FALLBACK,
}
"""The timeline's outcome of a simulated attempt (replay/timeline.py) as the live queue names it."""


@dataclass(frozen=True)
class Pricing:
    """What a simulated run is priced at: on-demand $ per instance-hour by type, and the share of
    its training time SageMaker does not bill a spot attempt."""

    prices: Prices
    spot_discount: float = DEFAULT_SPOT_DISCOUNT

    @classmethod
    def of(cls, configured: Prices, region: str | None, spot_discount: float = DEFAULT_SPOT_DISCOUNT) -> Pricing:
        """The configuration's prices over the prices shipped for `region` (none without one)."""
        in_force = prices_in_force(configured, None, default_prices(region), region=region, now=EPOCH)
        return cls(in_force.prices, spot_discount)


def priced_attempt(job: Job, attempt: Attempt, *, training_s: float, lost_s: float, pricing: Pricing) -> AttemptCost:
    """The cost of a simulated `attempt` (closed) that trained `training_s` seconds, `lost_s` of
    them thrown away: billed in full on demand, less `pricing.spot_discount` on spot."""
    billable_s = training_s * (1 - pricing.spot_discount) if is_spot(job, attempt) else training_s
    assert attempt.ended_at is not None, "an attempt is priced when it ends"
    cost = attempt_cost(
        job,
        attempt,
        billable_s=round(billable_s),
        training_s=round(training_s),
        ended_at=attempt.ended_at,
        prices=pricing.prices,
    )
    if cost.spend_usd is None:
        return cost
    waste = cost.spend_usd * min(lost_s / training_s, 1.0) if training_s > 0 else 0.0
    return replace(cost, waste_usd=waste)


@dataclass
class _OpenAttempt:
    job: Job
    """As it started: its team, instances and purchase option (a spot fallback changes the job)."""
    training_s: float = 0.0
    lost_s: float = 0.0


class CostMeter:
    """Prices a run's attempts as they end, keeps each team's spend per month for the budgets, and
    what the budgets held (smq's pass only)."""

    def __init__(self, pricing: Pricing, config: SchedulerConfig) -> None:
        self.pricing = pricing
        self.pools = config.pools
        self.budgets: Mapping[str, Budget] = config.budgets
        self.total = CostFigures()
        self.teams: dict[str, CostFigures] = {}
        self.month_spend: dict[tuple[datetime, str], float] = defaultdict(float)
        self.held: dict[str, str] = {}
        """Job → team, of the jobs the last pass held for budget."""
        self.held_jobs: dict[str, set[str]] = defaultdict(set)
        self.held_s: dict[str, float] = defaultdict(float)
        self._open: dict[tuple[str, int], _OpenAttempt] = {}
        self._current: dict[str, int] = {}

    def smq_pass(self, smq: SmqPass) -> PolicyFunction:
        """smq's pass, remembering which jobs it held for budget."""

        def decide_and_note_holds(snapshot: Snapshot, now: datetime) -> list[Action]:
            actions = smq(snapshot, now)
            decision = smq.last
            assert decision is not None, "the pass just decided"
            teams = {job.name: budget_team(job) for job in snapshot.jobs if job.name in decision.budget_held}
            self.held = teams
            for name, team in teams.items():
                self.held_jobs[team].add(name)
            return actions

        return decide_and_note_holds

    def with_spend(self, snapshot: Snapshot, now: datetime) -> Snapshot:
        """`snapshot` as a pass with budgets sees it: each team's spend this month, and the prices."""
        month = month_start(now)
        spend = {team: usd for (start, team), usd in self.month_spend.items() if start == month}
        return replace(snapshot, team_spend=spend, prices=self.pricing.prices)

    def reset_pass_at(self, now: datetime, *, idle: bool) -> datetime | None:
        """When to pass again for jobs held by budget that nothing else will wake (`idle`: no event
        is due): at the next month's start, as the live queue's periodic pass would, unless this is
        already a month's first pass (what it held a new month does not release)."""
        if not self.held or not idle or now == month_start(now):
            return None
        return next_month_start(now)

    def observe(self, start: float, end: float) -> None:
        """The jobs the last pass held stay held over [start, end): no pass runs in between."""
        for team in self.held.values():
            self.held_s[team] += end - start

    def started(self, job: Job) -> None:
        """`job` started its current attempt."""
        attempt = job.current_attempt
        assert attempt is not None
        self._open[(job.name, attempt.number)] = _OpenAttempt(job)
        self._current[job.name] = attempt.number

    def trained(self, name: str, seconds: float, lost_s: float) -> None:
        """The current attempt of `name` trained `seconds` more and lost `lost_s` of its training."""
        attempt = self._open[(name, self._current[name])]
        attempt.training_s += seconds
        attempt.lost_s += lost_s

    def ended(self, segment: Segment, now: datetime) -> None:
        """The attempt of `segment` (closed) gave its instances back `now`."""
        opened = self._open.pop((segment.job, segment.attempt))
        started = opened.job.current_attempt
        assert started is not None and segment.outcome is not None
        attempt = replace(started, ended_at=now, outcome=TIMELINE_OUTCOMES[segment.outcome])
        cost = priced_attempt(
            opened.job,
            attempt,
            training_s=opened.training_s + _billed_stop_s(segment),
            lost_s=opened.lost_s,
            pricing=self.pricing,
        )
        figures = CostFigures.of(cost)
        team = budget_team(opened.job)
        self.total = self.total.plus(figures)
        self.teams[team] = self.teams.get(team, CostFigures()).plus(figures)
        self.month_spend[(month_start(now), team)] += figures.spend_usd

    def report(self) -> dict[str, Any]:
        """metrics.json's `cost`: the prices of the run's pools, totals, per team, per budget."""
        cost: dict[str, Any] = {
            "spot_discount": self.pricing.spot_discount,
            "prices_usd_per_instance_hour": {
                pool: self.pricing.prices[pool] for pool in sorted(self.pools) if pool in self.pricing.prices
            },
            "unpriced_types": sorted(pool for pool in self.pools if pool not in self.pricing.prices),
            "total": figures_json(self.total),
            "teams": {team: figures_json(self.teams[team]) for team in sorted(self.teams)},
        }
        if self.budgets:
            cost["budgets"] = {team: self._budget_json(team, budget) for team, budget in sorted(self.budgets.items())}
        return cost

    def _budget_json(self, team: str, budget: Budget) -> dict[str, Any]:
        return {
            "monthly_usd": budget.monthly_usd,
            "action": str(budget.action),
            "spend_by_month_usd": {
                f"{start:%Y-%m}": _usd(usd)
                for (start, spender), usd in sorted(self.month_spend.items())
                if spender == team
            },
            "held_jobs": len(self.held_jobs.get(team, ())),
            "held_s": round(self.held_s.get(team, 0.0), 3),
        }


STOPPED_BY_THE_QUEUE = frozenset({"preempted", "plan_window_closed"})
"""Timeline outcomes of attempts the queue stopped: SageMaker bills the time they take to stop."""


def _billed_stop_s(segment: Segment) -> float:
    """How long an attempt the queue stopped took to stop, once it had trained: SageMaker bills it."""
    if segment.outcome not in STOPPED_BY_THE_QUEUE or segment.running_s is None or segment.stop_s is None:
        return 0.0
    return (segment.end_s or segment.stop_s) - segment.stop_s


def figures_json(figures: CostFigures) -> dict[str, Any]:
    """One group's figures (no idle stops in a simulation, so none avoided)."""
    return {
        "spend_usd": _usd(figures.spend_usd),
        "on_demand_equivalent_usd": _usd(figures.on_demand_equivalent_usd),
        "spot_savings_usd": _usd(figures.spot_savings_usd),
        "waste_usd": _usd(figures.waste_usd),
        "attempts": figures.attempts,
        "unpriced_attempts": figures.unpriced_attempts,
    }


def _usd(value: float) -> float:
    return round(value, 2)
