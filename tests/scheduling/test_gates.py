"""The gates of a pass (`scheduling/gates.py`): each holds a job with its own kind and reason, the
first that applies wins, a held job blocks nothing, and the pass publishes every job it explained
(`Decision.explained`), gated or decided by a phase, and no other."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given, settings
from smq_lambda.domain.config.teams import Quota, Sharing, Teams
from smq_lambda.domain.costs.budgets import Budget, BudgetAction
from smq_lambda.domain.jobs.model import Job
from smq_lambda.scheduling import gates
from smq_lambda.scheduling.actions import ExplainWait, StartJob
from smq_lambda.scheduling.decide import decide_pass, open_pass
from smq_lambda.scheduling.holds import HoldKind
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from tests.scheduling.builders import G5, NOW, P5, pools, queue
from tests.scheduling.test_plan_windows import CONFIG as PLAN_CONFIG
from tests.scheduling.test_plan_windows import ON_PLAN, pending
from tests.scheduling.test_properties import configs, snapshots

RESERVING = Teams(quotas={"a": Quota({P5: 1}, sharing=Sharing.RESERVE), "b": Quota({P5: 1}, sharing=Sharing.RESERVE)})
BUDGETED = SchedulerConfig(pools={P5: 8}, budgets={"a": Budget(monthly_usd=50, action=BudgetAction.HOLD)})


def state_for(snapshot: Snapshot, config: SchedulerConfig) -> PassState:
    """The state a pass at NOW walks from, its features plugged in."""
    state, _, _ = open_pass(snapshot, NOW, config)
    return state


def priced(snapshot: Snapshot) -> Snapshot:
    """Every job runs at most an hour at $100 an instance-hour; team a spent nothing yet."""
    jobs = tuple(replace(job, max_runtime_s=3600) for job in snapshot.jobs)
    return replace(snapshot, jobs=jobs, team_spend={"a": 0.0}, prices={P5: 100.0})


CASES = [
    ("fits", queue().pending("x").build(), pools(p5=2), None, None),
    ("too large", queue().pending("x", needs={P5: 3}).build(), pools(p5=2), HoldKind.TOO_LARGE, "but the pool has 2"),
    (
        "too large before backoff",
        queue().pending("x", needs={P5: 3}, backoff_until=NOW + timedelta(minutes=5)).build(),
        pools(p5=2),
        HoldKind.TOO_LARGE,
        "but the pool has 2",
    ),
    (
        "backoff",
        queue().pending("x", backoff_until=NOW + timedelta(minutes=5)).build(),
        pools(p5=2),
        HoldKind.BACKOFF,
        "ThrottlingException",
    ),
    (
        "plan window closed",
        Snapshot(jobs=(pending("x", ON_PLAN),)),
        PLAN_CONFIG,
        HoldKind.PLAN_WINDOW_CLOSED,
        "next window opens",
    ),
    (
        "beyond reach",
        queue().pending("x", needs={P5: 2}, team="a").build(),
        replace(pools(p5=4), teams=RESERVING),
        HoldKind.BEYOND_REACH,
        "more than a may ever hold there (1",
    ),
    (
        "budget",
        priced(queue().pending("x", team="a").build()),
        BUDGETED,
        HoldKind.BUDGET,
        "held by budget",
    ),
    (
        "beyond reach before budget",
        priced(queue().pending("x", needs={P5: 2}, team="a").build()),
        replace(BUDGETED, teams=RESERVING),
        HoldKind.BEYOND_REACH,
        "may ever hold",
    ),
    (
        "a flexible job: its placements are gated by the placement phase",
        queue().pending("x", team="a", prefers=((P5, 2), (G5, 1))).build(),
        replace(pools(p5=4, g5=4), teams=RESERVING),
        None,
        None,
    ),
]


@pytest.mark.parametrize(("case", "snapshot", "config", "kind", "says"), CASES, ids=[case[0] for case in CASES])
def test_the_first_gate_that_applies_holds_the_job_with_its_kind_and_reason(
    case: str, snapshot: Snapshot, config: SchedulerConfig, kind: HoldKind | None, says: str | None
) -> None:
    (job,) = snapshot.jobs

    held = gates.gate(state_for(snapshot, config), job)

    assert (held and held.kind) == kind
    if held is not None:
        assert says is not None and says in held.reason
        decision = decide_pass(snapshot, NOW, config)
        assert [action.reason for action in decision.actions if isinstance(action, ExplainWait)] == [held.reason]
        assert decision.explained == {job.name} and decision.heads == {}


def test_a_held_job_blocks_nothing_behind_it() -> None:
    snapshot = priced(queue().pending("held", team="a").pending("after", team="b").build())

    decision = decide_pass(snapshot, NOW, replace(BUDGETED, teams=RESERVING))

    assert [action.job_name for action in decision.actions if isinstance(action, StartJob)] == ["after"]
    assert decision.budget_held == {"held"} and "held" in decision.explained


def test_a_flexible_job_every_placement_of_which_a_gate_holds_is_held_by_the_first() -> None:
    snapshot = queue().pending("x", team="a", prefers=((P5, 2), (G5, 9))).build()

    decision = decide_pass(snapshot, NOW, replace(pools(p5=4, g5=4), teams=RESERVING))

    (explained,) = [action for action in decision.actions if isinstance(action, ExplainWait)]
    assert "more than a may ever hold there" in explained.reason and decision.explained == {"x"}


@settings(max_examples=60, deadline=None)
@given(snapshots(), configs())
def test_the_pass_publishes_exactly_the_jobs_it_explained(snapshot: Snapshot, config: SchedulerConfig) -> None:
    """Every job given a new reason is published as explained; a published job not given one had
    that reason already (the pass found it current)."""
    decision = decide_pass(snapshot, NOW, config)

    written = {action.job_name for action in decision.actions if isinstance(action, ExplainWait)}
    jobs: dict[str, Job] = {job.name: job for job in snapshot.jobs}
    assert written <= decision.explained
    assert all(jobs[name].reason is not None for name in decision.explained - written)
