"""What a simulated run costs (simulation/costs.py): each attempt priced as SageMaker bills it (spot
less its discount, waste the work it threw away, unpriced never $0), per team and policy in
metrics.json and the printed table, and the configuration's hold budgets applied to smq's pass."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq.cli.main import main
from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.domain.costs.cost_totals import CostFigures
from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.replay.virtual_queue import EPOCH
from smq_lambda.scheduling.actions import ExplainWait
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.simulation.costs import Pricing, priced_attempt
from smq_lambda.simulation.engine import Result, Timing, simulate
from smq_lambda.simulation.policies import PolicyName

POOL = "ml.g5.xlarge"
HOUR = 3600.0
INSTANT = Timing(0.0, 0.0, 0.0, 0)
"""Instances ready at the start, so billed time is exactly the training."""
FEBRUARY_S = (EPOCH.replace(month=2) - EPOCH).total_seconds()


def ended_attempt(*, spot: bool = False, instances: int = 1, pool: str = POOL) -> tuple[Job, Attempt]:
    attempt = Attempt(1, "job-1", EPOCH, EPOCH + timedelta(hours=1), AttemptOutcome.PREEMPTED)
    job = Job(
        name="job",
        job_id="1",
        state=JobState.PENDING,
        priority=0,
        submitted_at=EPOCH,
        demand={pool: instances},
        owner="o",
        attempts=(attempt,),
        request={"EnableManagedSpotTraining": True} if spot else {},
    )
    return job, attempt


@pytest.mark.parametrize(
    ("spot", "instances", "training_s", "lost_s", "expected"),
    [
        (False, 2, HOUR, 0.0, (20.0, 20.0, 0.0, 0.0)),
        (False, 1, HOUR, 900.0, (10.0, 10.0, 0.0, 2.5)),
        (True, 1, HOUR, 0.0, (3.0, 10.0, 7.0, 0.0)),
        (True, 2, HOUR, 1800.0, (6.0, 20.0, 14.0, 3.0)),
        (False, 1, 0.0, 0.0, (0.0, 0.0, 0.0, 0.0)),
    ],
    ids=["on-demand", "on-demand-waste", "spot-saves-its-discount", "spot-waste-at-what-spot-paid", "never-trained"],
)
def test_an_attempt_is_priced_as_sagemaker_bills_it(
    spot: bool, instances: int, training_s: float, lost_s: float, expected: tuple[float, ...]
) -> None:
    job, attempt = ended_attempt(spot=spot, instances=instances)

    cost = priced_attempt(job, attempt, training_s=training_s, lost_s=lost_s, pricing=Pricing({POOL: 10.0}, 0.7))

    figures = (cost.spend_usd, cost.on_demand_equivalent_usd, cost.spot_savings_usd, cost.waste_usd)
    assert figures == pytest.approx(expected)


def test_an_unpriced_type_prices_nothing_and_is_counted() -> None:
    job, attempt = ended_attempt(pool="ml.unpriced.xlarge")

    cost = priced_attempt(job, attempt, training_s=HOUR, lost_s=600.0, pricing=Pricing({POOL: 10.0}))

    assert (cost.spend_usd, cost.waste_usd, cost.spot_savings_usd) == (None, None, None)
    assert CostFigures.of(cost) == CostFigures(attempts=1, unpriced_attempts=1)


@given(
    spot=st.booleans(),
    instances=st.integers(1, 64),
    price=st.floats(0.0, 100.0),
    discount=st.floats(0.0, 1.0),
    training_s=st.integers(0, 30 * 86400),
    lost_share=st.floats(0.0, 1.0),
)
def test_spend_is_never_negative_and_waste_never_above_it(
    spot: bool, instances: int, price: float, discount: float, training_s: int, lost_share: float
) -> None:
    job, attempt = ended_attempt(spot=spot, instances=instances)

    cost = priced_attempt(
        job, attempt, training_s=training_s, lost_s=lost_share * training_s, pricing=Pricing({POOL: price}, discount)
    )

    assert cost.spend_usd is not None and cost.waste_usd is not None and cost.spot_savings_usd is not None
    assert 0.0 <= cost.waste_usd <= cost.spend_usd + 1e-9
    assert cost.spot_savings_usd >= 0.0
    assert cost.spend_usd + cost.spot_savings_usd == pytest.approx(cost.on_demand_equivalent_usd)


def test_pricing_takes_the_configurations_prices_over_the_regions_shipped_ones() -> None:
    pricing = Pricing.of({"ml.p4d.24xlarge": 30.0}, "us-east-1")

    assert pricing.prices["ml.p4d.24xlarge"] == 30.0
    assert pricing.prices["ml.p3.2xlarge"] == 3.825
    assert Pricing.of({}, None).prices == {}


def run(trace: list[TraceJob], document: dict[str, Any], policy: PolicyName = PolicyName.SMQ, **kwargs: Any) -> Result:
    parsed = parse_config_document(document, source="test")
    config = SchedulerConfig.of(parsed, backfill=True)
    return simulate(trace, config, policy, INSTANT, pricing=Pricing.of(parsed.prices, None), **kwargs)


def test_a_preemption_bills_its_stop_and_prices_the_work_it_lost() -> None:
    low = TraceJob("low", 0.0, 0, POOL, 1, HOUR, team="a", checkpoint_every_s=600.0, stop_s=60.0)
    high = TraceJob("high", 1500.0, 5, POOL, 1, HOUR, team="b")

    cost = run([low, high], {"pools": {POOL: 1}, "prices": {POOL: 36.0}}).metrics["cost"]

    # low: 1,500 s trained, 60 s stopping, then the 2,400 s after its checkpoint at 1,200 s; high: an hour
    assert cost["teams"]["a"] == {
        "spend_usd": 39.6,
        "on_demand_equivalent_usd": 39.6,
        "spot_savings_usd": 0.0,
        "waste_usd": 3.0,
        "attempts": 2,
        "unpriced_attempts": 0,
    }
    assert cost["teams"]["b"]["spend_usd"] == 36.0
    assert cost["total"]["spend_usd"] == 75.6


def test_a_spot_job_saves_its_discount_and_wastes_what_an_interruption_lost() -> None:
    job = TraceJob("s", 0.0, 0, POOL, 1, HOUR, checkpoint_every_s=600.0, interruptions_s=(1000.0,))

    result = run([job], {"pools": {POOL: 1}, "prices": {POOL: 36.0}})

    # 1,000 s, then the 3,000 s after its checkpoint at 600 s: 4,000 s, 30% of it billed
    assert result.metrics["lost_work_by_cause_s"]["interruption"] == 400.0
    assert result.metrics["cost"]["total"] == {
        "spend_usd": 12.0,
        "on_demand_equivalent_usd": 40.0,
        "spot_savings_usd": 28.0,
        "waste_usd": 1.2,
        "attempts": 1,
        "unpriced_attempts": 0,
    }


BUDGETED = {
    "pools": {POOL: 2},
    "prices": {POOL: 10.0},
    "budgets": {"a": {"monthly_usd": 15, "action": "hold"}},
}
BUDGET_TRACE = [
    TraceJob("a-first", 0.0, 0, POOL, 1, HOUR, team="a", max_runtime_s=3600),
    TraceJob("a-second", 4000.0, 0, POOL, 1, HOUR, team="a", max_runtime_s=3600),
    TraceJob("b-first", 4000.0, 0, POOL, 1, HOUR, team="b", max_runtime_s=3600),
]


def starts(result: Result) -> dict[str, float]:
    return {segment.job: segment.start_s for segment in result.segments}


def test_a_hold_budget_holds_its_teams_job_until_the_month_resets_while_another_team_runs() -> None:
    reasons: dict[str, str] = {}

    def note(snapshot: Snapshot, actions: Any, now: Any) -> None:
        reasons.update({action.job_name: action.reason for action in actions if isinstance(action, ExplainWait)})

    result = run(BUDGET_TRACE, BUDGETED, observe=note)

    assert starts(result) == {"a-first": 0.0, "b-first": 4000.0, "a-second": FEBRUARY_S}
    assert "budget" in reasons["a-second"]
    assert result.metrics["cost"]["budgets"] == {
        "a": {
            "monthly_usd": 15.0,
            "action": "hold",
            "spend_by_month_usd": {"2026-01": 10.0, "2026-02": 10.0},
            "held_jobs": 1,
            "held_s": FEBRUARY_S - 4000.0,
        }
    }


def test_the_baselines_hold_nothing_for_budget() -> None:
    result = run(BUDGET_TRACE, BUDGETED, PolicyName.FIFO)

    assert starts(result)["a-second"] == 4000.0
    assert result.metrics["cost"]["budgets"]["a"]["held_jobs"] == 0


def test_a_job_its_budget_can_never_price_is_held_to_the_end_and_the_run_ends() -> None:
    document = {**BUDGETED, "prices": {}}

    result = run(BUDGET_TRACE[:1], document)

    assert result.metrics["unfinished"] == ["a-first"]
    assert result.metrics["cost"]["budgets"]["a"]["held_jobs"] == 1
    assert result.metrics["cost"]["unpriced_types"] == [POOL]


def test_without_pricing_the_metrics_have_no_cost() -> None:
    config = SchedulerConfig.of(parse_config_document(BUDGETED, source="test"))

    result = simulate(BUDGET_TRACE, config, PolicyName.SMQ, INSTANT)

    assert "cost" not in result.metrics
    assert starts(result)["a-second"] == 4000.0


def write(tmp_path: Path, document: dict[str, Any]) -> tuple[str, str]:
    trace, config = tmp_path / "trace.jsonl", tmp_path / "config.json"
    trace.write_text("".join(json.dumps(job.to_json()) + "\n" for job in BUDGET_TRACE))
    config.write_text(json.dumps(document))
    return str(trace), str(config)


def test_smq_simulate_writes_the_cost_of_each_policy_and_prints_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, config = write(tmp_path, BUDGETED)

    code = main(["simulate", trace, "--config", config, "--compare", "--start-s", "0", "--out", str(tmp_path / "out")])

    assert code == 0
    for policy in PolicyName:
        cost = json.loads((tmp_path / "out" / policy / "metrics.json").read_text())["cost"]
        assert set(cost) == {
            "spot_discount",
            "prices_usd_per_instance_hour",
            "unpriced_types",
            "total",
            "teams",
            "budgets",
        }
        assert cost["total"]["spend_usd"] == 30.0
        assert set(cost["teams"]) == {"a", "b"}
    printed = capsys.readouterr().out
    assert "| smq      | a      | $20.00  " in printed
    assert "$15.00 hold" in printed


def test_smq_simulate_without_prices_or_budgets_reports_no_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, config = write(tmp_path, {"pools": {POOL: 2}})

    assert main(["simulate", trace, "--config", config, "--out", str(tmp_path)]) == 0

    assert "cost" not in json.loads((tmp_path / "metrics.json").read_text())
    assert "cost (US dollars" not in capsys.readouterr().out


@pytest.mark.parametrize("share", ["1.5", "-0.1", "most"])
def test_a_spot_discount_outside_0_to_1_is_refused(
    share: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, config = write(tmp_path, BUDGETED)

    code = main(["simulate", trace, "--config", config, "--spot-discount", share])

    assert code == 2
    assert "--spot-discount: expected a share from 0 to 1" in capsys.readouterr().err
