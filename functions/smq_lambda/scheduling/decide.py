"""One scheduling pass: which pending jobs start, which live jobs are stopped, and why the rest wait.

A pass is a short list of named phases, each a module with its rule in its docstring. Before a
phase decides a job, the pass asks two questions that decide nothing: may it run at all (`gates`:
a held job is explained and blocks nothing), and what could be done for it now, at one placement
(`verdicts.assess`: behind a head, fits on a warm pool, fits, borrows, room can be made, no fit).
The features (training plans, aging, purchase options, hold budgets, warm pools) plug in at named
moments (`features`, registered in FEATURES); the core below never names one. The phases, in order:

* **measure** the snapshot: one ledger of instances per pool and per team (`capacity.Ledger`),
  under the configuration in force at `now` (`plan_windows`: a training plan's pool holds its
  instances only while one of its windows is open);
* **stop before plan windows end** (`plan_stops`): the jobs running in a training plan's pool
  once its window closes, `stop_margin_s` before the window's end, so they checkpoint;
* **order the heads**: pending jobs in the one queue order, priority desc (aged: `aging`),
  submission asc, name; a spot job's purchase options (`purchase_options`) are its placements;
  the admission walk first **places** each flexible job (`placement`): chooses the instance
  preference the other phases decide it at, or lets it wait in every pool it prefers;
* **admit within quota** (`admission`), walking that order: a job starts when it fits in its
  team's quota and in the instances its team may use, and no earlier job of its team waits for
  its pools. Without quotas every job is in the unassigned group, whose quota is the whole pool;
* **borrow** (`borrowing`): each team's first job beyond its quota borrows idle quota of teams
  that lend, teams in fair-share order, or else stops lower-priority jobs of its own team;
* **nominate preemptions and reclaims** (`nomination`) for a head within its quota that lacks
  instances: reclaim of borrowed capacity, else priority preemption inside its team, through one
  victim selection (`preemption`);
* **backfill** (`backfill`): a job behind its team's waiting head claims room of its own while
  the head has its room, and, with backfill on, starts on instances the head cannot use yet,
  inside its team's quota (beyond it only as borrowing);
* **keep warm** (`warm_pools`): each start's keep-alive, kept while a matching job waits, else
  none, and the warm pools no waiting job matches are ended. In the admission walk a job that
  matches a warm pool starts on it, and a head that lacks instances ends warm pools it does not
  match (`Decision.warm_releases`);
* **reasons**: each phase writes the reason of the jobs it decided (`reasons`, `quota_reasons`),
  worded from the numbers: a group that holds a whole pool alone (the unassigned group without
  quotas) is told what fits, a team with a share of it what its quota allows. A job that merely
  waits behind a head gets none: its position and "N jobs ahead" change with every job that
  starts or arrives, so they are computed when someone reads the job (`reasons.queued`), never
  written to every waiting job on every pass.

The admission walk hands a job to the borrowing, nomination and backfill phases as soon as it
leaves it undecided, so later decisions see earlier ones: a start takes its instances, a preemption
counts as releasing, a wait keeps its room. Only where another team lends idle quota in a job's
pools (never without quotas) does the walk leave it for later: a head beyond its quota to the
borrowing phase, after every job within a quota, and a job behind its team's head to the backfill
phase, after the borrowers, who may yet take those instances. Actions come out in the order they were decided (the starts, stops and wait of one job
together).

A pass may see only the first pending jobs of each pool (see `queue_front`): the jobs that could start,
the head, and a look-ahead behind it. Every decision depends only on jobs ahead of the one decided
(and on the live jobs, all of which are seen), so deciding over that prefix decides its jobs exactly
as over the whole queue. Jobs a gate holds (`gates`: larger than their pool or than their team may
ever hold, a training plan's window closed, in start backoff, beyond their team's hold budget,
counting what the pass admitted for the team before them) are explained and block nothing. Pools
never block each other. The pass publishes which jobs it explained (`Decision.explained`): readers
show their stored reason, and a place in the queue for the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.scheduling.actions import Action, ReleaseWarmPool
from smq_lambda.scheduling.admission import Later, admit_within_quota
from smq_lambda.scheduling.aging import AgingFeature
from smq_lambda.scheduling.backfill import backfill
from smq_lambda.scheduling.borrowing import borrow, by_fair_share
from smq_lambda.scheduling.budget_hold import BudgetHoldFeature
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.features import Feature, PassInputs
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.plan_stops import PlanWindowsFeature
from smq_lambda.scheduling.purchase_options import PurchaseOptionsFeature
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.scheduling.warm_pools import WarmPoolsFeature

FEATURES: tuple[type[Feature], ...] = (
    PlanWindowsFeature,
    AgingFeature,
    PurchaseOptionsFeature,
    BudgetHoldFeature,
    WarmPoolsFeature,
)
"""The features plugged into every pass (scheduling/features.py), in the order their hooks run: the
plan windows set the configuration in force before aging and the purchase options read it."""


@dataclass(frozen=True)
class Decision:
    actions: list[Action]
    heads: Mapping[str, str]
    """Per blocked pool, the name of the first job that waits for it: readers of a waiting job
    learn from it whether the job's stored reason is current (a head's is) or is computed on read."""
    explained: frozenset[str] = frozenset()
    """The jobs whose reason the pass wrote, or found current (a gate held them, or a phase decided
    them): the read side shows that reason rather than a place in the queue computed on read."""
    budget_held: frozenset[str] = frozenset()
    """The jobs their team's hold budget set aside (`budget_hold`), among those explained."""
    warm_releases: tuple[ReleaseWarmPool, ...] = ()
    """The warm pools the pass ends (`warm_pools`): for a job that waits ahead of every job that
    matches them (rule 2), and those no pending job the pass saw matches (rule 4)."""


def decide(snapshot: Snapshot, now: datetime, config: SchedulerConfig) -> list[Action]:
    """The actions of one pass over `snapshot` at `now`. Pure: reads its arguments, returns actions."""
    return decide_pass(snapshot, now, config).actions


def decide_pass(snapshot: Snapshot, now: datetime, config: SchedulerConfig, measured: Ledger | None = None) -> Decision:
    """`decide`, with the heads the pass found. `measured`: the snapshot's ledger when the caller
    measured it already to size its fronts (pending jobs hold nothing, so the ledger of the live
    jobs is the snapshot's, measured under the configuration in force at `now`); the pass takes it
    over and updates it as it decides."""
    state, inputs, features = open_pass(snapshot, now, config, measured)
    later = admit_within_quota(state, inputs.pending)
    for job in by_fair_share(state, later[Later.BORROW]):
        borrow(state, job)
    for job in later[Later.BACKFILL]:
        backfill(state, job)
    actions = state.actions
    for feature in features:
        actions = feature.finish(state, inputs.pending, actions)
    return Decision(
        actions,
        {pool: job.name for pool, job in state.heads.items()},
        frozenset(state.explained),
        state.budget_held,
        tuple(state.warm.releases),
    )


def open_pass(
    snapshot: Snapshot, now: datetime, config: SchedulerConfig, measured: Ledger | None = None
) -> tuple[PassState, PassInputs, list[Feature]]:
    """The state a pass walks from, what it walks, and its features: each of FEATURES made for this
    pass and asked to prepare the inputs, the ledger measured under the configuration in force, then
    each feature opened on the state."""
    features = [feature() for feature in FEATURES]
    inputs = PassInputs(snapshot, now, config, order_pending(snapshot))
    for feature in features:
        inputs = feature.prepare(inputs)
    ledger = measured if measured is not None else Ledger.measure(snapshot, inputs.config)
    state = PassState(snapshot, now, inputs.config, ledger, inputs.suffixes, inputs.notes, features)
    for feature in features:
        feature.open(state)
    return state, inputs, features


def order_pending(snapshot: Snapshot) -> list[Job]:
    return sorted((job for job in snapshot.jobs if job.state is JobState.PENDING), key=lambda job: job.order)
