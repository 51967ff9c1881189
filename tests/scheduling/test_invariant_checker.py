"""The invariant checker (scheduling/invariants.py) catches each kind of broken decision: a table of
hand-made passes that break one invariant each, beside the passes `decide` makes of them."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from smq_lambda.domain.config.spot_document import SpotSection
from smq_lambda.domain.costs.budgets import Budget, BudgetAction
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import Purchase, spot_pool
from smq_lambda.domain.warm.warm_pools import WarmPool
from smq_lambda.scheduling.actions import Action, ExplainWait, StartJob
from smq_lambda.scheduling.decide import decide_pass
from smq_lambda.scheduling.invariants import Invariant, check_pass
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from .builders import G5, NOW, P5, queue

SPOT = SpotSection(pools={G5: 1})
HOLD = {"vision": Budget(monthly_usd=50, action=BudgetAction.HOLD)}


def spot(snapshot: Snapshot) -> Snapshot:
    jobs = tuple(
        replace(job, purchase=Purchase.SPOT, request={"EnableManagedSpotTraining": True, "ResourceConfig": {}})
        for job in snapshot.jobs
    )
    return replace(snapshot, jobs=jobs)


def priced(snapshot: Snapshot) -> Snapshot:
    jobs = tuple(replace(job, max_runtime_s=3600) for job in snapshot.jobs)
    return replace(snapshot, jobs=jobs, team_spend={"vision": 0.0}, prices={P5: 100.0, G5: 1.0})


def start(name: str, placement: Placement, attempt: int = 1) -> StartJob:
    return StartJob(name, attempt, "started", placement=placement)


WARM = WarmPool("left", G5, G5, 1, "k", available_until=NOW + timedelta(minutes=5))

CASES: list[tuple[str, Snapshot, SchedulerConfig, list[Action], Invariant]] = [
    (
        "a start into a full pool",
        queue().running("a", needs={G5: 1}).pending("b", needs={G5: 1}).build(),
        SchedulerConfig(pools={G5: 1}),
        [start("b", Placement(G5, 1))],
        Invariant.POOL_OVER_CAPACITY,
    ),
    (
        "a start beside a warm pool it does not take over",
        replace(queue().pending("b", needs={G5: 1}).build(), warm_pools=(WARM,)),
        SchedulerConfig(pools={G5: 1}),
        [start("b", Placement(G5, 1))],
        Invariant.POOL_OVER_CAPACITY,
    ),
    (
        "a start on a training plan the configuration does not have",
        queue().pending("b", needs={P5: 1}).build(),
        SchedulerConfig(pools={P5: 1, "plan:elsewhere": 1}),
        [start("b", Placement(P5, 1, pool="plan:elsewhere", training_plan_arn="arn:unknown"))],
        Invariant.ONE_PLACEMENT,
    ),
    (
        "an on-demand job started on spot",
        queue().pending("b", needs={G5: 1}).build(),
        SchedulerConfig(pools={G5: 2}),
        [start("b", Placement(G5, 1, spot=True))],
        Invariant.ONE_PLACEMENT,
    ),
    (
        "a spot start counted in the on-demand pool where the type has a spot pool",
        spot(queue().pending("b", needs={G5: 1}).build()),
        SchedulerConfig(pools={G5: 2}, spot=SPOT),
        [start("b", Placement(G5, 1, spot=True))],
        Invariant.ONE_PLACEMENT,
    ),
    (
        "a start at a placement the job does not have",
        queue().pending("b", needs={G5: 1}).build(),
        SchedulerConfig(pools={G5: 4}),
        [start("b", Placement(G5, 2))],
        Invariant.ONE_PLACEMENT,
    ),
    (
        "a start without a placement",
        queue().pending("b", needs={G5: 1}).build(),
        SchedulerConfig(pools={G5: 4}),
        [StartJob("b", 1, "started")],
        Invariant.ONE_PLACEMENT,
    ),
    (
        "a start the hold budget does not cover",
        priced(queue().pending("b", needs={P5: 1}, team="vision").build()),
        SchedulerConfig(pools={P5: 1}, budgets=HOLD),
        [start("b", Placement(P5, 1))],
        Invariant.BUDGET_KEPT,
    ),
    (
        "a job left waiting beside room",
        queue().pending("b", needs={G5: 1}).build(),
        SchedulerConfig(pools={G5: 1}),
        [ExplainWait("b", "waits")],
        Invariant.NO_IDLE_WAIT,
    ),
]


@pytest.mark.parametrize(
    ("snapshot", "config", "actions", "invariant"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_checker_names_the_invariant_a_decision_breaks(
    snapshot: Snapshot, config: SchedulerConfig, actions: list[Action], invariant: Invariant
) -> None:
    violations = check_pass(snapshot, config, actions, NOW)

    assert [violation.invariant for violation in violations] == [invariant]


@pytest.mark.parametrize(
    ("snapshot", "config"), [(case[1], case[2]) for case in CASES], ids=[case[0] for case in CASES]
)
def test_the_pass_itself_breaks_none_of_them(snapshot: Snapshot, config: SchedulerConfig) -> None:
    decision = decide_pass(snapshot, NOW, config)

    assert check_pass(snapshot, config, decision.actions, NOW, budget_held=decision.budget_held) == []


def test_a_pool_that_shrank_under_its_running_jobs_is_no_pass_s_fault() -> None:
    snapshot = queue().running("a", needs={G5: 2}).build()

    assert check_pass(snapshot, SchedulerConfig(pools={G5: 1}), [], NOW) == []


def test_a_live_job_counted_elsewhere_than_its_placement_is_caught() -> None:
    snapshot = queue().running("a", needs={G5: 1}).build()
    [job] = snapshot.jobs
    attempt = replace(job.attempts[-1], placement=Placement(G5, 1, pool=spot_pool(G5), spot=True))
    snapshot = replace(snapshot, jobs=(replace(job, attempts=(attempt,), purchase=Purchase.SPOT),))

    [violation] = check_pass(snapshot, SchedulerConfig(pools={G5: 1}, spot=SPOT), [], NOW)

    assert violation.invariant is Invariant.ONE_PLACEMENT and "the queue counts" in violation.detail
