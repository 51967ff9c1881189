"""Each ended attempt is priced and recorded once, under its team, owner and cost tags, with one
TeamSpendUsd metric: driven through the scheduler handler over the fakes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from smq_lambda.domain.config.teams import UNASSIGNED
from smq_lambda.domain.costs.cost_totals import CostFigures
from smq_lambda.domain.costs.costs import AttemptCost
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.errors import CostDimensionsPending, ServiceUnavailable
from smq_lambda.governance.policy import IdlePolicy, Policy
from smq_lambda.ports import TrainingEndListener
from smq_lambda.service.cost_recorder import CostRecorder, publish_team_spend

from tests.service.harness import POOL, World, queued_job
from tests.support.fake_costs import InMemoryCostRecords, StaticPriceSource

PRICE = 36.0
"""$ per instance-hour: one cent per instance-second, so the figures read as seconds / 100."""
OWNER = "arn:aws:iam::000000000000:user/alice"


@dataclass
class CostWorld(World):
    """The harness's world with the cost recorder listening, and the spend it published."""

    prices: StaticPriceSource = field(default_factory=lambda: StaticPriceSource({POOL: PRICE}))
    records: InMemoryCostRecords = field(default_factory=InMemoryCostRecords)
    published: list[tuple[str, float]] = field(default_factory=list)

    def end_listeners(self) -> list[TrainingEndListener]:
        recorder = CostRecorder(
            records=self.records,
            prices=self.prices,
            config=self.config,
            clock=self.clock,
            training=self.sagemaker,
            policy=self.policy,
            publish_spend=lambda team, usd: self.published.append((team, usd)),
        )
        return [*super().end_listeners(), recorder]

    def running(self, name: str, *, priority: int = 0, team: str | None = None, **request: Any) -> str:
        """Submit a job (its request's members replaced by `request`) and take it to InProgress;
        returns its attempt's training job name."""
        self.clock.advance(seconds=1)
        queued = queued_job(name, priority=priority, submitted_at=self.clock())
        request = {**queued.request, **request}
        max_runtime_s = request["StoppingCondition"]["MaxRuntimeInSeconds"]
        self.store.create(replace(queued, team=team, request=request, max_runtime_s=max_runtime_s))
        self.kick()
        self.progress(name, "InProgress", secondary_status="Training")
        attempt = self.job(name).current_attempt
        assert attempt is not None
        return attempt.training_job_name

    def ends(self, training_job_name: str, status: str, *, trained: int, billed: int) -> None:
        self.clock.advance(seconds=trained)
        self.sagemaker.set_status(training_job_name, status, training_time_s=trained, billable_time_s=billed)
        self.deliver(self.event(training_job_name))

    def figures(self, dimension: str = "team") -> dict[str, CostFigures]:
        return self.records.totals(dimension, [self.clock().date()])


def test_a_completed_attempt_costs_its_billable_seconds_at_the_price() -> None:
    world = CostWorld(capacity={POOL: 1})
    name = world.running("a", team="vision")

    world.ends(name, "Completed", trained=3600, billed=3600)

    assert world.figures() == {"vision": CostFigures(spend_usd=36.0, on_demand_equivalent_usd=36.0, attempts=1)}
    assert world.figures("owner") == {OWNER: CostFigures(spend_usd=36.0, on_demand_equivalent_usd=36.0, attempts=1)}
    assert world.published == [("vision", 36.0)]


def test_a_spot_attempt_saves_the_training_time_it_was_not_billed() -> None:
    world = CostWorld(capacity={POOL: 1})
    name = world.running("a", EnableManagedSpotTraining=True)

    world.ends(name, "Completed", trained=3600, billed=1200)

    assert world.figures() == {
        UNASSIGNED: CostFigures(spend_usd=12.0, on_demand_equivalent_usd=36.0, spot_savings_usd=24.0, attempts=1)
    }
    assert world.published == [(UNASSIGNED, 12.0)]


def test_a_preempted_attempt_wastes_the_work_redone_since_its_last_checkpoint() -> None:
    world = CostWorld(capacity={POOL: 1})
    low = world.running("low", team="vision")
    world.later(1000)
    world.submit("high", 5)

    world.ends(low, "Stopped", trained=1000, billed=1000)

    attempt = world.job("low").attempts[0]
    assert attempt.outcome is AttemptOutcome.PREEMPTED
    assert world.figures()["vision"] == CostFigures(
        spend_usd=10.0, on_demand_equivalent_usd=10.0, waste_usd=3.0, attempts=1
    )


def test_an_idle_stop_wastes_the_idle_window_and_avoids_the_rest_of_the_max_runtime() -> None:
    world = CostWorld(capacity={POOL: 1})
    world.policy.policy = Policy(idle=IdlePolicy(period_seconds=60, evaluation_periods=5))
    name = world.running("a")
    job = world.job("a")
    world.store.save(
        lifecycle.stop_for_governance(job, world.clock(), outcome=AttemptOutcome.IDLE_GPU, reason="idle GPUs"),
        expected_version=job.version,
    )
    world.sagemaker.stop(name)

    world.ends(name, "Stopped", trained=2000, billed=2000)

    assert world.job("a").attempts[0].outcome is AttemptOutcome.IDLE_GPU
    assert world.figures()[UNASSIGNED] == CostFigures(
        spend_usd=20.0, on_demand_equivalent_usd=20.0, waste_usd=3.0, idle_stop_avoided_usd=16.0, attempts=1
    )


def test_an_unpriced_attempt_is_recorded_as_unpriced_and_publishes_no_spend() -> None:
    world = CostWorld(capacity={POOL: 1}, prices=StaticPriceSource({}))
    name = world.running("a")

    world.ends(name, "Completed", trained=3600, billed=3600)

    assert world.figures() == {UNASSIGNED: CostFigures(attempts=1, unpriced_attempts=1)}
    assert world.published == []


@pytest.mark.parametrize("end", ["Completed", "Failed", "Stopped"])
def test_a_duplicate_or_reconciled_end_counts_once(end: str) -> None:
    world = CostWorld(capacity={POOL: 1})
    name = world.running("a", team="vision")
    world.ends(name, end, trained=600, billed=600)

    world.deliver(world.event(name))
    world.reconcile()

    assert world.figures()["vision"].attempts == 1
    assert world.published == [("vision", 6.0)]


def test_an_end_reported_without_its_times_is_priced_from_describe_training_job() -> None:
    world = CostWorld(capacity={POOL: 1})
    name = world.running("a")
    world.sagemaker.set_status(name, "Completed", training_time_s=1800, billable_time_s=1800)
    event = world.event(name)
    del event["detail"]["TrainingTimeInSeconds"], event["detail"]["BillableTimeInSeconds"]

    world.deliver(event)

    assert world.figures()[UNASSIGNED].spend_usd == 18.0


def test_spend_is_grouped_by_the_configured_cost_tags() -> None:
    world = CostWorld(capacity={POOL: 2})
    world.config.config = replace(world.config.config, cost_tags=("project",))
    tagged = world.running("a", Tags=[{"Key": "project", "Value": "vit"}])
    untagged = world.running("b")

    world.ends(tagged, "Completed", trained=100, billed=100)
    world.ends(untagged, "Completed", trained=200, billed=200)

    figures = world.figures("tag:project")
    assert (figures["vit"].spend_usd, figures["(untagged)"].spend_usd) == (1.0, 2.0)


def test_cost_records_out_of_reach_fail_the_report_and_its_redelivery_records_it() -> None:
    world = CostWorld(capacity={POOL: 1})
    name = world.running("a")
    world.records.unavailable = True

    world.clock.advance(seconds=60)
    world.sagemaker.set_status(name, "Completed", training_time_s=60, billable_time_s=60)
    summary = world.deliver(world.event(name))
    assert summary["job_errors"] == ["a"]
    assert world.published == []

    world.records.unavailable = False
    world.deliver(world.event(name))

    assert world.figures()[UNASSIGNED].spend_usd == pytest.approx(0.6)
    assert world.published == [(UNASSIGNED, pytest.approx(0.6))]


class TagsThrottledOnce(InMemoryCostRecords):
    """Counts the first record of each attempt, then finds its tags' table throttled, as the DynamoDB
    cost records do when a tag dimension stays pending; the next record of the attempt writes them."""

    def record(self, cost: AttemptCost, groups: Mapping[str, str]) -> bool:
        recorded = super().record(cost, groups)
        if recorded:
            throttled = ServiceUnavailable("DynamoDB", "ThrottlingException", "Rate exceeded")
            raise CostDimensionsPending(cost.training_job_name, ["tag:project"], recorded=True) from throttled
        return recorded


def test_a_tag_left_pending_publishes_the_spend_once_and_the_report_comes_back_for_it() -> None:
    world = CostWorld(capacity={POOL: 1}, records=TagsThrottledOnce())
    name = world.running("a", team="vision")
    world.clock.advance(seconds=60)
    world.sagemaker.set_status(name, "Completed", training_time_s=60, billable_time_s=60)

    first = world.deliver(world.event(name))
    again = world.deliver(world.event(name))

    assert (first["job_errors"], again["job_errors"]) == (["a"], [])
    assert world.published == [("vision", pytest.approx(0.6))]
    assert world.figures()["vision"].attempts == 1


def test_the_team_spend_metric_is_one_emf_record_with_the_team_dimension(capsys: pytest.CaptureFixture[str]) -> None:
    publish_team_spend("vision", 12.5)

    record = json.loads(capsys.readouterr().out)

    assert record["TeamSpendUsd"] == [12.5]
    assert record["team"] == "vision"
    assert ["team", "service"] in record["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
