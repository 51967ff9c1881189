"""The start estimates a pass publishes replay the queue as that pass saw it: with the spot
interruption rates it decided with, and with the budgets that hold a team's jobs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from smq_lambda.domain.config.spot_document import AdaptiveSpot, SpotSection
from smq_lambda.domain.costs.budgets import Budget, BudgetAction
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import purchase_of, spot_pool
from smq_lambda.domain.placements.spot_rates import with_interruptions
from smq_lambda.forecast.start_estimate import StartEstimate

from tests.service.harness import POOL, World, queued_job
from tests.service.test_budgets import PRICE, spent
from tests.support.fake_costs import InMemoryCostRecords, StaticPriceSource
from tests.support.fakes import FakeClock

SPOT_POOL = spot_pool(POOL)
TEN_HOURS = 10 * 3600


def submit(
    world: World,
    name: str,
    *,
    spot: bool = False,
    max_runtime_s: int = 3600,
    expected_s: int | None = None,
    team: str | None = None,
) -> None:
    world.clock.advance(seconds=1)
    job = queued_job(name, priority=0, submitted_at=world.clock())
    request = {**job.request, "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime_s}}
    if spot:
        request["EnableManagedSpotTraining"] = True
    world.store.create(
        replace(
            job,
            request=request,
            purchase=purchase_of(request),
            max_runtime_s=max_runtime_s,
            expected_duration_s=expected_s,
            team=team,
        )
    )
    world.kick()


def estimate_of(world: World, name: str) -> StartEstimate:
    report = world.pass_summaries.latest()
    assert report is not None
    return report.estimates[name]


def test_a_spot_job_the_pass_sends_on_demand_is_estimated_on_demand() -> None:
    """Spot is interrupted too often, so the pass offers the waiting spot job on demand only, where
    a ten-minute job runs; the spot pool is held for ten hours. The estimate replays the pass's
    rates: it starts when the ten-minute job ends, not when the spot pool frees."""
    world = World(capacity={POOL: 1, SPOT_POOL: 1})
    adaptive = AdaptiveSpot(0.5, half_life_s=3600)
    world.config.config = replace(world.config.config, spot=SpotSection(pools={POOL: 1}, adaptive=adaptive))
    submit(world, "long", spot=True, max_runtime_s=TEN_HOURS)
    submit(world, "short", expected_s=600)
    assert world.job("long").where.selected == Placement(POOL, 1, pool=SPOT_POOL, spot=True)
    interrupted = with_interruptions(world.spot_interruptions.book, "elsewhere-1", POOL, 2, world.clock())
    assert interrupted is not None
    world.spot_interruptions.book = interrupted

    submit(world, "waiting", spot=True)

    assert world.job("waiting").state is JobState.PENDING
    estimate = estimate_of(world, "waiting")
    assert estimate.at is not None
    assert timedelta(0) < estimate.at - world.clock() <= timedelta(minutes=10)


def budget_world(*, spend_usd: float, capacity: int) -> World:
    """Team vision has a hold budget of $100 a month; each job runs at most an hour at $10/h."""
    records = InMemoryCostRecords()
    world = World(
        capacity={POOL: capacity},
        cost_records=records,
        prices=StaticPriceSource({POOL: PRICE}),
        clock=FakeClock(datetime(2026, 11, 26, 9, tzinfo=UTC)),
    )
    spent(records, "vision", spend_usd, world.clock())
    world.config.config = replace(world.config.config, budgets={"vision": Budget(100, action=BudgetAction.HOLD)})
    return world


def assert_waits_for_the_budget(estimate: StartEstimate) -> None:
    assert estimate.at is None
    assert estimate.assumed == (
        "when team vision's hold budget allows it: after the budget resets on 2026-12-01 00:00 UTC, "
        "or when the budget is raised"
    )


def test_a_job_its_budget_holds_waits_for_the_budget_not_for_room() -> None:
    world = budget_world(spend_usd=95, capacity=4)

    submit(world, "held", team="vision")

    assert (world.job("held").reason or "").startswith("held by budget")
    assert_waits_for_the_budget(estimate_of(world, "held"))


def test_a_held_job_stays_held_when_its_teams_running_job_ends() -> None:
    """$85 spent, and the running job commits $10 more: the next $10 job is held. When the running
    job ends, its cost is spent rather than committed, so the job is held still."""
    world = budget_world(spend_usd=85, capacity=1)
    submit(world, "running", team="vision")
    assert world.job("running").state is JobState.STARTING

    submit(world, "held", team="vision")

    assert_waits_for_the_budget(estimate_of(world, "held"))


def test_a_job_is_held_once_its_team_starts_the_job_ahead_of_it() -> None:
    """$75 spent and $10 committed: either waiting job alone fits the budget, not both. The first
    starts when the running job ends; the second is held from then on."""
    world = budget_world(spend_usd=75, capacity=1)
    submit(world, "running", team="vision")
    submit(world, "next", team="vision")
    submit(world, "after", team="vision")

    running = world.job("running").current_attempt
    assert running is not None
    assert estimate_of(world, "next").at == running.started_at + timedelta(hours=1)
    assert_waits_for_the_budget(estimate_of(world, "after"))
