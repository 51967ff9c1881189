"""Team budgets through the scheduler and the API over fakes: a hold budget holds a team's next
job with a reason the API shows, another team's job starts, a raised budget starts it at the next
pass; warnings reach the team once per threshold."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from smq_lambda.domain.costs.budgets import Budget, BudgetAction
from smq_lambda.domain.costs.costs import AttemptCost
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.errors import AccessDenied, InvalidRequest
from smq_lambda.governance.notices import NoticeAction
from smq_lambda.service.budget_warnings import BudgetWarnings
from smq_lambda.service.queue_api import QueueService

from tests.service.harness import POOL, World, queued_job, training_request
from tests.support.fake_budget_marks import InMemoryBudgetWarningMarks
from tests.support.fake_costs import InMemoryCostRecords, StaticPriceSource
from tests.support.fakes import RecordingTrigger

PRICE = 10.0
"""$ per instance-hour of POOL: the harness's jobs run at most an hour, so each is estimated at $10."""


def spent(records: InMemoryCostRecords, team: str, usd: float, at: datetime, name: str = "earlier-1") -> None:
    cost = AttemptCost(name, at, False, 3600, 3600, usd, usd, 0.0, 0.0, 0.0)
    records.record(cost, {"team": team})


def world_with_budget(monthly_usd: float, spend_usd: float) -> tuple[World, InMemoryCostRecords]:
    records = InMemoryCostRecords()
    world = World(capacity={POOL: 4}, cost_records=records, prices=StaticPriceSource({POOL: PRICE}))
    spent(records, "vision", spend_usd, world.clock())
    world.config.config = replace(
        world.config.config, budgets={"vision": Budget(monthly_usd, action=BudgetAction.HOLD)}
    )
    return world, records


def submit(world: World, name: str, team: str) -> None:
    world.clock.advance(seconds=1)
    world.store.create(replace(queued_job(name, priority=0, submitted_at=world.clock()), team=team, max_runtime_s=3600))
    world.kick()


def test_a_team_over_its_budget_waits_while_another_team_starts_and_a_raised_budget_starts_it() -> None:
    world, _ = world_with_budget(100, 95)
    api = QueueService(
        world.store, world.config, RecordingTrigger(), pass_summaries=world.pass_summaries, clock=world.clock
    )

    submit(world, "vision-job", "vision")
    submit(world, "nlp-job", "nlp")

    held = api.get("vision-job")
    assert held.job.state is JobState.PENDING
    assert held.reason is not None and held.reason.startswith("held by budget")
    assert "$100.00 a month" in held.reason and "$5.00 left" in held.reason and "$95.00 spent" in held.reason
    assert api.get("nlp-job").job.state is JobState.STARTING

    world.config.config = replace(world.config.config, budgets={"vision": Budget(200, action=BudgetAction.HOLD)})
    world.kick()

    assert api.get("vision-job").job.state is JobState.STARTING


def test_a_warn_budget_never_holds() -> None:
    world, _ = world_with_budget(100, 500)
    world.config.config = replace(world.config.config, budgets={"vision": Budget(100)})

    submit(world, "vision-job", "vision")

    assert api_state(world, "vision-job") is JobState.STARTING


def test_without_cost_records_no_budget_holds() -> None:
    world = World(capacity={POOL: 4})
    world.config.config = replace(world.config.config, budgets={"vision": Budget(1, action=BudgetAction.HOLD)})

    submit(world, "vision-job", "vision")

    assert api_state(world, "vision-job") is JobState.STARTING


def test_each_threshold_is_told_once_to_the_team() -> None:
    world, records = world_with_budget(100, 0)
    marks = InMemoryBudgetWarningMarks()
    warnings = BudgetWarnings(
        config=world.config, records=records, marks=marks, notifier=world.notifier, clock=world.clock
    )
    job = replace(queued_job("vision-job", priority=0, submitted_at=world.clock()), team="vision")
    status = TrainingJobStatus(name="j-1", status="Completed")

    for usd, name in [(50, "a-1"), (35, "b-1"), (1, "c-1"), (20, "d-1")]:
        spent(records, "vision", usd, world.clock(), name)
        warnings.on_training_end(job, 1, status)
        warnings.on_training_end(job, 1, status)  # a duplicate report

    told = [notice for notice in world.notifier.sent if notice.action is NoticeAction.BUDGET]
    assert [notice.subject for notice in told] == [
        "smq: team vision has spent 80% of its 2024-01 budget",
        "smq: team vision has spent 100% of its 2024-01 budget",
    ]
    assert {notice.attributes()["team"] for notice in told} == {"vision"}


def test_the_month_is_the_utc_month_of_the_clock() -> None:
    world, records = world_with_budget(10, 0)
    marks = InMemoryBudgetWarningMarks()
    warnings = BudgetWarnings(config=world.config, records=records, marks=marks, notifier=None, clock=world.clock)
    spent(records, "vision", 20, world.clock(), "x-1")

    warnings.on_training_end(
        replace(queued_job("j", priority=0, submitted_at=world.clock()), team="vision"),
        1,
        TrainingJobStatus(name="j-1", status="Completed"),
    )

    assert marks.marks == {
        ("vision", f"{world.clock().astimezone(UTC):%Y-%m}", 0.8),
        ("vision", f"{world.clock().astimezone(UTC):%Y-%m}", 1.0),
    }


ADMIN = "arn:aws:iam::000000000000:role/Admin"
ALICE = "arn:aws:iam::000000000000:user/alice"


def override_request(value: str = "true") -> dict:
    request = training_request("vip", priority=0)
    request["Tags"] = [*request["Tags"], {"Key": "smq:budget-override", "Value": value}]
    return request


def test_only_an_admin_may_submit_a_budget_override() -> None:
    world = World(capacity={POOL: 4})
    api = QueueService(world.store, world.config, RecordingTrigger(), admin_principals=[ADMIN], clock=world.clock)

    with pytest.raises(AccessDenied) as refused:
        api.submit(override_request(), ALICE)

    assert refused.value.field == "Tags[smq:budget-override]"
    assert world.store.get("vip") is None
    assert api.submit(override_request(), ADMIN).job.budget_override is True


def test_a_budget_override_must_be_true() -> None:
    world = World(capacity={POOL: 4})
    api = QueueService(world.store, world.config, RecordingTrigger(), admin_principals=[ADMIN], clock=world.clock)

    with pytest.raises(InvalidRequest) as refused:
        api.submit(override_request("yes"), ADMIN)

    assert refused.value.field == "Tags[smq:budget-override]"


def api_state(world: World, name: str) -> JobState:
    job = world.store.get(name)
    assert job is not None
    return job.state
