"""`everything` (issue 29): one generated account with every feature of the queue on at once, as a
real account runs them, so that what goes wrong only where features meet shows in one run.

- Pools: ml.p5.48xlarge on demand (`fast`) and a training plan of it (`plan:p5-reserved`: 6-hour
  windows every 12 hours for 40 days, then one on the first of each month); ml.g5.48xlarge on
  demand (`slow`) and on spot (`slow_spot`: a `spot` section with `on_demand_after_s` and an
  adaptive rate); ml.g5.12xlarge on demand (`warm`).
- Teams, one per way of sharing (domain/config/teams.py): vision lends and borrows with no limit, nlp
  borrows up to 2 instances per pool, speech lends, research reserves. Quotas of 1/8, 2/8, 2/8 and
  2/8 of every pool but the plan's; the rest, and the plan, for the jobs of no team.
- Jobs, by kind (the prefix of their names), dealt from a shuffled deck so that every kind comes up
  every dozen jobs: `pinned` (one type on demand), `flexible` (n fast, 2n slow training 1.5 times
  as long, half of them also 4n ml.g5.12xlarge as long again), `spot` (spot first, one in four spot
  only, interrupted 0 to 5 times), `planned` (half pinned to the plan, half the plan first and 2n
  slow after), and `warm`: sweeps of 3 to 6 jobs of one of three families (each one team's, one
  size) on ml.g5.12xlarge asking for a 30-minute keep-alive, so a later job of the sweep can start
  on an earlier one's instances. Sizes 1, 2 or 4 fast instances (or as many slow ones as the kind
  says), durations lognormal around an hour, three priorities, checkpoints every 15 minutes, a
  MaxRuntimeInSeconds of twice the longest duration rounded up to the hour; the groups (a job, or a
  sweep) arrive as a Poisson stream offering about 0.8 of the pools.
- Costs: prices for the three types (illustrative on-demand rates); budgets (nlp warns, speech and
  research hold) of what each team's jobs cost at their first preference (`budget_share` of it),
  never below 1.05 times the team's largest estimate. The running jobs' estimates (ceilings) hold
  some jobs for a while; the jobs past a budget wait for the next month's reset.

Not in it, because `smq simulate` does not model them: MaxWaitTimeInSeconds expiries (a trace has
no MaxWait, and the simulated SageMaker never stops an attempt at one), idle-GPU stops and instance
groups.

Every job can end: each job goes to a team (by TEAM_WEIGHTS) among those that may hold it in one of
its places (its pool, a spot job's spot pool or, when it may wait for on demand, its type's pool;
its team's quota and what it may borrow), and keeps only those places. A job no team may hold runs
on one fast instance with no team, so odd options (tiny pools, a borrow limit of 0) still give a
workload every job of which can end.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.domain.config.plan_document import MAX_WINDOWS, PLAN_POOL_PREFIX
from smq_lambda.domain.config.teams import Sharing
from smq_lambda.domain.costs.budgets import BudgetAction, next_month_start
from smq_lambda.domain.placements.purchase import Purchase, spot_pool
from smq_lambda.replay.events import DEFAULT_TIMING, Timing
from smq_lambda.replay.trace_job import TraceJob, TracePreference
from smq_lambda.replay.virtual_queue import EPOCH, PassObserver
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.costs import Pricing
from smq_lambda.simulation.engine import Result, simulate
from smq_lambda.simulation.policies import PolicyName

from smq.simulate.placement_workloads import FAST, KEEP_ALIVE_S, SLOW, SLOWER, WARM_TYPE
from smq.simulate.workload import HOUR, Workload

TEAMS = ("vision", "nlp", "speech", "research")
QUOTA_SHARES = (1 / 8, 2 / 8, 2 / 8, 2 / 8)
"""Each team's quota, a share of every pool but the plan's (rounded down)."""
TEAM_WEIGHTS: tuple[tuple[str | None, float], ...] = (
    ("vision", 0.3),
    ("nlp", 0.25),
    ("speech", 0.2),
    ("research", 0.15),
    (None, 0.1),
)
"""How often each team (None: no team) submits a job, among those that may run it somewhere."""
PLAN_NAME = "p5-reserved"
PLAN_POOL = PLAN_POOL_PREFIX + PLAN_NAME
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN_NAME}"
PLAN_EVERY_S, PLAN_OPEN_S, PLAN_TWICE_DAILY_S = 12 * HOUR, 6 * HOUR, 40 * 24 * HOUR
PRICES = {FAST: 55.04, SLOW: 20.36, WARM_TYPE: 7.09}
"""Illustrative on-demand $ per instance-hour: the budgets need every type priced."""
KIND_DECK = ("pinned", "pinned", "flexible", "flexible", "spot", "spot", "planned", "warm")
"""One round of groups (a job, or a warm sweep), shuffled: every kind comes up every dozen jobs or so."""
WARM_FAMILIES = 3
LOAD = 0.8
BUDGET_FLOOR = 1.05
"""A budget is at least this many times its team's largest estimate: below it, a job never starts."""


@dataclass(frozen=True)
class EverythingOptions:
    """What `everything` turns on and how large its pools are. The defaults: every feature on, and
    every job ends. A property test varies them (`st.builds(EverythingOptions, ...)`), operators'
    mistakes included: an on-demand pool of 0 beside spot capacity (`slow=0`), a spot pool of 0, a
    borrow limit of 0. Per-team tuples follow TEAMS."""

    backfill: bool = True
    """Not part of the workload: `everything_config` (the CLI's --backfill) applies it."""
    quotas: bool = True
    sharing: tuple[Sharing, ...] = (Sharing.LEND_AND_BORROW, Sharing.LEND_AND_BORROW, Sharing.LEND, Sharing.RESERVE)
    borrow_limits: tuple[int | None, ...] = (None, 2, None, None)
    """Read for the teams whose sharing borrows (the document refuses a limit on any other)."""
    budgets: tuple[BudgetAction | None, ...] = (None, BudgetAction.WARN, BudgetAction.HOLD, BudgetAction.HOLD)
    budget_share: float = 1.5
    """Each budget, as a share of what its team's jobs cost at their first preference."""
    spot_adaptive: bool = True
    flexible_spot: bool = False
    """A third of the spot jobs flexible over slow and fast. Off: with a `spot` section such a job
    stops the run (issue 29: simulation/placement_metrics.py looks its spot placement up among its
    preferences)."""
    on_demand_after_s: int | None = 1800
    plan: bool = True
    warm_pools: bool = True
    """Warm jobs ask for a keep-alive and share their family's key."""
    warm_pools_section: bool = True
    """The queue decides keep-alives (the `warm_pools` section)."""
    fast: int = 8
    slow: int = 8
    slow_spot: int = 8
    warm: int = 8
    plan_instances: int = 4

    def __post_init__(self) -> None:
        for name in ("sharing", "borrow_limits", "budgets"):
            if len(getattr(self, name)) != len(TEAMS):
                raise ValueError(f"{name} needs one entry per team of {TEAMS}")
        if min(self.fast, self.warm, self.plan_instances) < 1 or min(self.slow, self.slow_spot) < 0:
            raise ValueError("fast, warm and plan_instances need an instance; slow and slow_spot may be 0")
        if self.budget_share <= 0:
            raise ValueError("budget_share must be above 0")


DEFAULT_OPTIONS = EverythingOptions()


@dataclass(frozen=True)
class _Draft:
    """One job before it is named and timed."""

    kind: str
    team: str | None
    places: tuple[TracePreference, ...]
    priority: int
    purchase: str | None = None
    interruptions_s: tuple[float, ...] = ()
    warm_key: str | None = None
    offset_s: float = 0.0
    """From its group's arrival (a sweep's jobs come minutes apart)."""


@dataclass(frozen=True)
class _Family:
    key: str
    team: str | None
    instances: int
    typical_s: float


class _Account:
    """The pools and quotas of `options`, and the places a job of each team may run."""

    def __init__(self, options: EverythingOptions) -> None:
        self.options = options
        self.on_demand = {FAST: options.fast, SLOW: options.slow, WARM_TYPE: options.warm}
        self.pools = {**self.on_demand, spot_pool(SLOW): options.slow_spot}
        if options.plan:
            self.pools[PLAN_POOL] = options.plan_instances
        self.quotas = {
            team: {pool: math.floor(share * size) for pool, size in self.pools.items() if pool != PLAN_POOL}
            for team, share in zip(TEAMS, QUOTA_SHARES, strict=True)
        }

    def reach(self, team: str | None, pool: str) -> int:
        """The most instances a job of `team` may ever hold in `pool` (scheduling/pass_state.py's
        `beyond_reach`): its quota, and what it may borrow, never the quota other teams reserve."""
        size = self.pools.get(pool, 0)
        if not self.options.quotas:
            return size
        reserved = sum(
            self.quotas[other].get(pool, 0)
            for other, sharing in zip(TEAMS, self.options.sharing, strict=True)
            if other != team and not sharing.lends
        )
        if team is None:
            return size - reserved
        index = TEAMS.index(team)
        if not self.options.sharing[index].borrows:
            return self.quotas[team].get(pool, 0)
        limit = self.options.borrow_limits[index]
        return size - reserved if limit is None else min(size - reserved, self.quotas[team].get(pool, 0) + limit)

    def fits(self, place: TracePreference, team: str | None, purchase: str | None) -> bool:
        if purchase is None:
            return self.reach(team, place.pool) >= place.instances
        counted_in = spot_pool(place.pool) if place.pool == SLOW else place.pool
        waits_for_on_demand = self.options.on_demand_after_s is not None  # the adaptive rate may never rise
        on_demand = purchase == Purchase.SPOT and waits_for_on_demand and place.pool == SLOW
        return max(self.reach(team, counted_in), self.reach(team, place.pool) if on_demand else 0) >= place.instances

    def draft(self, rng: random.Random, kind: str) -> _Draft:
        size, duration = rng.choice((1, 1, 2, 4)), _duration(rng, HOUR, 0.6)
        priority = rng.choices((0, 1, 2), (0.6, 0.3, 0.1))[0]
        fast = TracePreference(FAST, size, duration)
        slow = TracePreference(SLOW, 2 * size, round(duration * SLOWER))
        purchase: str | None = None
        interruptions: tuple[float, ...] = ()
        places: tuple[TracePreference, ...]
        if kind == "pinned":
            places = (rng.choice((fast, slow)),)
        elif kind == "flexible":
            wide = TracePreference(WARM_TYPE, 4 * size, round(slow.duration_s * SLOWER))
            places = (fast, slow, wide) if rng.random() < 0.5 else (fast, slow)
        elif kind == "spot":
            purchase = rng.choice((Purchase.SPOT, Purchase.SPOT, Purchase.SPOT, Purchase.SPOT_ONLY)).value
            flexible = rng.random() < 1 / 3 and self.options.flexible_spot
            places = (slow, fast) if flexible else (slow,)
            count = rng.randint(0, 5)
            interruptions = tuple(sorted(float(rng.randint(60, int(slow.duration_s))) for _ in range(count)))
        else:
            planned = TracePreference(PLAN_POOL, size, duration) if self.options.plan else fast
            places = (planned,) if rng.random() < 0.5 else (planned, slow)
        able = [(team, weight) for team, weight in TEAM_WEIGHTS if any(self.fits(p, team, purchase) for p in places)]
        if not able:
            return _Draft(kind, None, (TracePreference(FAST, 1, duration),), priority)
        team = rng.choices([team for team, _ in able], [weight for _, weight in able])[0]
        kept = tuple(place for place in places if self.fits(place, team, purchase))
        return _Draft(kind, team, kept, priority, purchase, interruptions)

    def families(self, rng: random.Random) -> list[_Family]:
        """The warm-pool families: each one team's job of one size on WARM_TYPE."""
        families = []
        for number in range(WARM_FAMILIES):
            team = rng.choice(TEAMS)
            sizes = [size for size in (1, 2, 4) if self.reach(team, WARM_TYPE) >= size]
            family_team, size = (team, rng.choice(sizes)) if sizes else (None, 1)
            families.append(_Family(f"family-{number}", family_team, size, _duration(rng, 2 / 3 * HOUR, 0.4)))
        return families

    def sweep(self, rng: random.Random, family: _Family, count: int) -> list[_Draft]:
        """`count` jobs of `family` submitted up to two minutes apart, at one priority."""
        priority, offset, drafts = rng.choice((0, 0, 1)), 0.0, []
        for _ in range(count):
            place = TracePreference(WARM_TYPE, family.instances, _duration(rng, family.typical_s, 0.3))
            key = family.key if self.options.warm_pools else None
            drafts.append(_Draft("warm", family.team, (place,), priority, warm_key=key, offset_s=round(offset, 1)))
            offset += rng.uniform(0, 120)
        return drafts

    def document(self, jobs: list[TraceJob]) -> dict[str, Any]:
        """The configuration document of the account, with the budgets made for `jobs`."""
        options = self.options
        spot: dict[str, Any] = {"pools": {SLOW: options.slow_spot}}
        if options.on_demand_after_s is not None:
            spot["on_demand_after_s"] = options.on_demand_after_s
        if options.spot_adaptive:
            spot["adaptive"] = {"max_interruptions_per_hour": 2, "half_life_s": 3600}
        document: dict[str, Any] = {"pools": self.on_demand, "spot": spot, "prices": PRICES}
        if options.quotas:
            document["quotas"] = {team: self._quota(team) for team in TEAMS}
        if options.plan:
            document["training_plans"] = {PLAN_NAME: _plan(options.plan_instances)}
        budgets = {
            team: {"monthly_usd": _budget(jobs, team, options.budget_share), "action": action.value}
            for team, action in zip(TEAMS, options.budgets, strict=True)
            if action is not None
        }
        if budgets:
            document["budgets"] = budgets
        if options.warm_pools_section:
            document["warm_pools"] = {"max_keep_alive_s": KEEP_ALIVE_S}
        return document

    def _quota(self, team: str) -> dict[str, Any]:
        index = TEAMS.index(team)
        sharing, limit = self.options.sharing[index], self.options.borrow_limits[index]
        quota: dict[str, Any] = {"instances": self.quotas[team], "sharing": sharing.value}
        if sharing.borrows and limit is not None:
            quota["borrow_limit"] = limit
        return quota


def everything(seed: int, jobs: int = 120, options: EverythingOptions = DEFAULT_OPTIONS) -> Workload:
    """`jobs` jobs of the account `options` describes (the module docstring), the same for a seed."""
    rng = random.Random(seed)
    account = _Account(options)
    families = account.families(rng)
    groups: list[list[_Draft]] = []
    deck: list[str] = []
    while (count := sum(len(group) for group in groups)) < jobs:
        deck = deck or rng.sample(KIND_DECK, len(KIND_DECK))
        kind = deck.pop()
        if kind == "warm":
            groups.append(account.sweep(rng, rng.choice(families), min(rng.randint(3, 6), jobs - count)))
        else:
            groups.append([account.draft(rng, kind)])
    offered = sum(draft.places[0].instances * draft.places[0].duration_s for group in groups for draft in group)
    capacity = sum(account.pools.values())
    at, every = 0.0, offered / (len(groups) * capacity * LOAD)
    trace: list[TraceJob] = []
    for group in groups:
        first = len(trace)
        trace.extend(_job(draft, f"{draft.kind}-{first + index:04d}", at) for index, draft in enumerate(group))
        at += rng.expovariate(1 / every)
    trace.sort(key=lambda job: (job.submit_s, job.name))
    return Workload(trace, account.pools, account.document(trace))


def everything_config(workload: Workload, options: EverythingOptions = DEFAULT_OPTIONS) -> SchedulerConfig:
    """What smq's pass reads for `workload`: its document, with the backfill of `options`."""
    document = parse_config_document(workload.config, source="everything")
    return SchedulerConfig.of(document, backfill=options.backfill)


def simulate_everything(
    seed: int,
    jobs: int = 60,
    options: EverythingOptions = DEFAULT_OPTIONS,
    policy: PolicyName = PolicyName.SMQ,
    *,
    timing: Timing = DEFAULT_TIMING,
    observe: PassObserver | None = None,
) -> Result:
    """One priced run of `everything(seed, jobs, options)`, as `smq simulate` runs its trace and
    config.json (budgets hold under smq only). 60 jobs take about a second of CPU: a size for a
    property test's every example."""
    workload = everything(seed, jobs, options)
    config = everything_config(workload, options)
    pricing = Pricing.of(config.prices, None)
    return simulate(workload.jobs, config, policy, timing, observe, pricing=pricing)


def _job(draft: _Draft, name: str, arrival_s: float) -> TraceJob:
    first, *alternatives = draft.places
    longest = max(place.duration_s for place in draft.places)
    return TraceJob(
        name=name,
        submit_s=round(arrival_s + draft.offset_s, 1),
        priority=draft.priority,
        pool=first.pool,
        instances=first.instances,
        duration_s=first.duration_s,
        team=draft.team,
        checkpoint_every_s=900.0,
        stop_s=60.0,
        interruptions_s=draft.interruptions_s,
        max_runtime_s=math.ceil(2 * longest / HOUR) * int(HOUR),
        alternatives=tuple(alternatives),
        purchase=draft.purchase,
        keep_alive_s=KEEP_ALIVE_S if draft.warm_key is not None else 0,
        warm_key=draft.warm_key,
    )


def _duration(rng: random.Random, typical_s: float, sigma: float) -> float:
    """Lognormal around `typical_s`, from 10 minutes to 6 hours, in whole seconds."""
    return float(round(min(max(rng.lognormvariate(0, sigma) * typical_s, 600.0), 6 * HOUR)))


def _plan(instances: int) -> dict[str, Any]:
    """The plan of FAST: 6-hour windows every 12 hours from the first hour for PLAN_TWICE_DAILY_S,
    then one on the first of each month, so a job a hold budget keeps for months (each month
    `budget_share` lets in a few) still meets a window after its budget's reset."""
    starts = [HOUR + number * PLAN_EVERY_S for number in range(int(PLAN_TWICE_DAILY_S // PLAN_EVERY_S))]
    month = EPOCH + timedelta(seconds=PLAN_TWICE_DAILY_S)
    while len(starts) < MAX_WINDOWS:
        month = next_month_start(month)
        starts.append((month - EPOCH).total_seconds() + HOUR)
    windows = [{"start": _at(start), "end": _at(start + PLAN_OPEN_S)} for start in starts]
    return {"arn": PLAN_ARN, "instance_type": FAST, "instances": instances, "windows": windows, "stop_margin_s": 900}


def _at(seconds: float) -> str:
    return (EPOCH + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _budget(jobs: list[TraceJob], team: str, share: float) -> float:
    """`share` of what `team`'s jobs cost at their first preference, and at least BUDGET_FLOOR times
    its largest estimate (MaxRuntimeInSeconds at the first preference's price)."""
    own = [job for job in jobs if job.team == team]
    costs = [_price(job) * job.instances * job.duration_s / HOUR for job in own]
    largest = max((_price(job) * job.instances * (job.max_runtime_s or 0) / HOUR for job in own), default=0.0)
    return round(max(share * sum(costs), BUDGET_FLOOR * largest, 1.0), 2)


def _price(job: TraceJob) -> float:
    return PRICES[FAST if job.pool == PLAN_POOL else job.pool]
