"""One placement per attempt (issue "Hardening III"): the placement the pass chooses is recorded on
the attempt and is the only source of what it holds, sends and costs, across combinations of
flexible jobs, spot pools, training plans, warm pools, budgets and teams. Each case failed before
its fix; each decision is also run through the invariant checker."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from smq_lambda.domain.config.plan_document import PlanWindow, TrainingPlan
from smq_lambda.domain.config.spot_document import SpotSection
from smq_lambda.domain.config.teams import Quota, Sharing, Teams
from smq_lambda.domain.config.warm_pool_document import WarmPoolPolicy
from smq_lambda.domain.costs.budgets import Budget, BudgetAction
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.placements.placement import Placement, pinned_request
from smq_lambda.domain.placements.purchase import Purchase, spot_pool
from smq_lambda.domain.warm.warm_pools import WarmPool
from smq_lambda.governance.spot import on_demand_request
from smq_lambda.scheduling.actions import ExplainWait, ReleaseWarmPool, StartJob
from smq_lambda.scheduling.decide import Decision, decide_pass
from smq_lambda.scheduling.invariants import check_pass
from smq_lambda.scheduling.purchase_options import offer
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from .builders import G5, NOW, P5, T0, TRN, JobBuilder, queue

PRICES = {P5: 100.0, G5: 1.0}
SPOT_REQUEST = {
    "EnableManagedSpotTraining": True,
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200},
    "ResourceConfig": {"InstancePreferences": [{"InstanceType": G5}, {"InstanceType": P5}], "InstanceCount": 1},
}


def decided(snapshot: Snapshot, config: SchedulerConfig) -> Decision:
    """The pass's decision, which the invariant checker must find nothing wrong with."""
    decision = decide_pass(snapshot, NOW, config)
    assert check_pass(snapshot, config, decision.actions, NOW, budget_held=decision.budget_held) == []
    return decision


def starts(decision: Decision) -> dict[str, Placement | None]:
    return {action.job_name: action.placement for action in decision.actions if isinstance(action, StartJob)}


def spot_flexible(name: str) -> Job:
    """A pending flexible spot job preferring one G5, then one P5, as submission stores it."""
    job = JobBuilder(name, T0).prefers((G5, 1), (P5, 1)).build()
    placements = tuple(replace(placement, spot=True) for placement in job.placements)
    return replace(job, request=SPOT_REQUEST, purchase=Purchase.SPOT, placements=placements)


def test_a_flexible_spot_job_that_fell_back_is_placed_and_sent_on_demand() -> None:
    config = SchedulerConfig(pools={G5: 4, P5: 1}, spot=SpotSection(pools={G5: 1}))
    job = spot_flexible("flex")
    running = lifecycle.mark_running(
        lifecycle.start(job, NOW, reason="r", placement=Placement(G5, 1, pool=spot_pool(G5), spot=True)), NOW
    )
    fell_back = lifecycle.fall_back_to_on_demand(
        running, NOW, request=on_demand_request(running.request), reason="interrupted"
    )

    decision = decided(Snapshot(jobs=(fell_back,)), config)

    placement = starts(decision)["flex"]
    assert placement == Placement(G5, 1)
    sent = pinned_request(fell_back.request, placement)
    assert sent["EnableManagedSpotTraining"] is False
    assert "MaxWaitTimeInSeconds" not in sent["StoppingCondition"]


def test_the_attempt_that_fell_back_keeps_holding_its_spot_placement() -> None:
    job = spot_flexible("flex")
    on_spot = Placement(G5, 1, pool=spot_pool(G5), spot=True)
    running = lifecycle.mark_running(lifecycle.start(job, NOW, reason="r", placement=on_spot), NOW)
    fell_back = lifecycle.fall_back_to_on_demand(
        running, NOW, request=on_demand_request(running.request), reason="interrupted"
    )

    attempt = fell_back.attempt(1)
    assert attempt is not None
    assert fell_back.held_by(attempt) == {spot_pool(G5): 1}


def hold_budget(usd: float) -> dict[str, Budget]:
    return {"vision": Budget(monthly_usd=usd, action=BudgetAction.HOLD)}


def budgeted(snapshot: Snapshot) -> Snapshot:
    jobs = tuple(replace(job, max_runtime_s=3600) for job in snapshot.jobs)
    return replace(snapshot, jobs=jobs, team_spend={"vision": 0.0}, prices=PRICES)


def test_a_budget_prices_a_flexible_job_at_each_placement_and_starts_it_where_it_is_covered() -> None:
    snapshot = budgeted(
        queue()
        .running("p5-busy", needs={P5: 1}, team="nlp")
        .pending("flex", prefers=((P5, 1), (G5, 1)), team="vision")
        .build()
    )
    config = SchedulerConfig(pools={P5: 1, G5: 4}, budgets=hold_budget(50))

    assert starts(decided(snapshot, config)) == {"flex": Placement(G5, 1)}


def test_a_budget_holds_a_job_whose_chosen_placement_it_does_not_cover() -> None:
    snapshot = budgeted(
        queue()
        .running("g5-busy", needs={G5: 4}, team="nlp")
        .pending("flex", prefers=((G5, 1), (P5, 1)), team="vision")
        .build()
    )
    config = SchedulerConfig(pools={P5: 1, G5: 4}, budgets=hold_budget(50))

    decision = decided(snapshot, config)

    assert starts(decision) == {}
    [explained] = [action for action in decision.actions if isinstance(action, ExplainWait)]
    assert f"2. 1 × {P5}: $50.00 left of team vision's hold budget, and it would cost at most $100.00 here" in (
        explained.reason
    )


def test_a_job_the_budget_covers_nowhere_is_held() -> None:
    snapshot = budgeted(queue().pending("flex", prefers=((P5, 1), (P5, 2)), team="vision").build())
    config = SchedulerConfig(pools={P5: 2}, budgets=hold_budget(50))

    decision = decided(snapshot, config)

    assert starts(decision) == {}
    assert decision.budget_held == {"flex"}


def test_an_unpriced_placement_never_starts_under_a_hold_budget() -> None:
    snapshot = budgeted(
        queue()
        .running("g5-busy", needs={G5: 4}, team="nlp")
        .pending("flex", prefers=((G5, 1), (TRN, 1)), team="vision")
        .build()
    )
    config = SchedulerConfig(pools={TRN: 1, G5: 4}, budgets=hold_budget(50))

    decision = decided(snapshot, config)

    assert starts(decision) == {}
    [explained] = [action for action in decision.actions if isinstance(action, ExplainWait)]
    assert f"{TRN} has no price" in explained.reason


def warm(name: str, key: str = "k", pool: str = G5) -> WarmPool:
    return WarmPool(name, pool, pool, 1, key, available_until=NOW + timedelta(minutes=30))


def test_a_warm_pool_a_job_started_on_is_counted_once_and_never_ended_under_it() -> None:
    reuser = JobBuilder("reuser", T0).needs(1, G5).build()
    reuser = lifecycle.start(
        replace(reuser, warm_key="k"), NOW, reason="r", placement=Placement(G5, 1, warm_pool="left-1")
    )
    snapshot = replace(queue().pending("next", needs={G5: 1}).build(), warm_pools=(warm("left-1"),))
    snapshot = replace(snapshot, jobs=(reuser, *snapshot.jobs))
    config = SchedulerConfig(pools={G5: 2}, warm_pools=WarmPoolPolicy(max_keep_alive_s=1800))

    decision = decided(snapshot, config)

    assert starts(decision) == {"next": Placement(G5, 1)}
    assert decision.warm_releases == ()


def test_a_head_beyond_its_quota_ends_no_other_teams_warm_pool() -> None:
    teams = Teams(
        quotas={
            "a": Quota({G5: 1}, sharing=Sharing.LEND),
            "b": Quota({G5: 1}),
        }
    )
    snapshot = (
        queue()
        .running("a-running", priority=5, needs={G5: 1}, team="a")
        .pending("a-head", priority=5, needs={G5: 1}, team="a")
        .pending("b-next", needs={G5: 1}, team="b")
        .build()
    )
    jobs = tuple(replace(job, warm_key="kb") if job.name == "b-next" else job for job in snapshot.jobs)
    snapshot = replace(snapshot, jobs=jobs, warm_pools=(warm("b-left", key="kb"),))
    config = SchedulerConfig(pools={G5: 2}, teams=teams, warm_pools=WarmPoolPolicy(max_keep_alive_s=1800))

    decision = decided(snapshot, config)

    assert not any(isinstance(release, ReleaseWarmPool) for release in decision.warm_releases)
    assert starts(decision)["b-next"] == Placement(G5, 1, warm_pool="b-left")


def test_a_spot_flexible_job_with_a_plan_preference_gets_spot_pools_for_the_others() -> None:
    plan = TrainingPlan(
        name="p5-reserved",
        arn="arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved",
        instance_type=P5,
        instances=1,
        windows=(PlanWindow(start=T0, end=T0 + timedelta(days=1)),),
    )
    on_plan = Placement(P5, 1, pool=plan.pool, training_plan_arns=(plan.arn,), training_plan_arn=plan.arn)
    job = replace(spot_flexible("flex"), placements=(on_plan, Placement(G5, 1, spot=True)))

    offered = offer(job, NOW, SpotSection(pools={G5: 2}), {}).job

    assert offered.placements == (on_plan, Placement(G5, 1, pool=spot_pool(G5), spot=True))


def test_a_spot_job_its_spot_pool_can_never_hold_goes_on_demand_at_once_when_it_may() -> None:
    job = replace(spot_flexible("flex"), placements=(Placement(G5, 3, spot=True),))

    waits = offer(job, NOW, SpotSection(pools={G5: 2}), {}).job
    goes = offer(job, NOW, SpotSection(pools={G5: 2}, on_demand_after_s=3600), {}).job

    assert waits.placements == (Placement(G5, 3, pool=spot_pool(G5), spot=True),)
    assert goes.placements == (Placement(G5, 3),)


def test_a_job_level_training_plan_is_never_sent_for_a_placement_without_one() -> None:
    request = {"ResourceConfig": {"InstanceType": G5, "InstanceCount": 1, "TrainingPlanArn": "arn:plan"}}

    assert "TrainingPlanArn" not in pinned_request(request, Placement(G5, 1))["ResourceConfig"]
