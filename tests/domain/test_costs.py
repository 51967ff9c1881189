"""The pure pricing of attempts and jobs: spend, spot savings, waste, idle stops, estimates, accrual."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.costs.costs import (
    REDONE_WITH_CHECKPOINTS_S,
    SAGEMAKER_DEFAULT_MAX_RUNTIME_S,
    accrued_cost,
    attempt_cost,
    estimated_cost,
    hourly_rate,
)
from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState

T0 = datetime(2026, 11, 2, tzinfo=UTC)
PRICES = {"ml.g5.xlarge": 1.0, "ml.p5.48xlarge": 36.0}


def a_job(demand: dict[str, int] | None = None, **request: Any) -> Job:
    return Job(
        name="train",
        job_id="id1",
        state=JobState.RUNNING,
        priority=0,
        submitted_at=T0,
        demand=demand or {"ml.p5.48xlarge": 2},
        owner="alice",
        request={"CheckpointConfig": {"S3Uri": "s3://b/c/"}, **request},
        max_runtime_s=7200,
    )


def ended(outcome: AttemptOutcome) -> Attempt:
    return Attempt(1, "train-abc-1", T0, ended_at=T0 + timedelta(hours=1), outcome=outcome)


def cost(job: Job, outcome: AttemptOutcome, *, billable_s: int | None, training_s: int | None, idle_window_s: int = 0):  # type: ignore[no-untyped-def]
    return attempt_cost(
        job,
        ended(outcome),
        billable_s=billable_s,
        training_s=training_s,
        ended_at=T0,
        prices=PRICES,
        idle_window_s=idle_window_s,
    )


def test_an_on_demand_attempt_spends_billable_time_times_instances_times_price() -> None:
    priced = cost(a_job(), AttemptOutcome.COMPLETED, billable_s=1800, training_s=1800)
    assert priced.spend_usd == pytest.approx(36.0)  # half an hour x 2 instances x $36
    assert priced.on_demand_equivalent_usd == pytest.approx(36.0)
    assert priced.spot_savings_usd == 0
    assert priced.waste_usd == 0


def test_a_spot_attempt_saves_the_training_time_sagemaker_did_not_bill() -> None:
    priced = cost(a_job(EnableManagedSpotTraining=True), AttemptOutcome.COMPLETED, billable_s=600, training_s=1800)
    assert priced.spot
    assert priced.spend_usd == pytest.approx(12.0)
    assert priced.on_demand_equivalent_usd == pytest.approx(36.0)
    assert priced.spot_savings_usd == pytest.approx(24.0)


@pytest.mark.parametrize(
    ("request_fields", "expected_waste_s"),
    [
        ({}, REDONE_WITH_CHECKPOINTS_S),
        ({"CheckpointConfig": None}, 1800),
    ],
    ids=["checkpoints: at most the assumed redone work", "no checkpoints: the whole attempt"],
)
def test_a_preempted_attempt_wastes_the_training_its_job_redoes(
    request_fields: dict[str, Any], expected_waste_s: int
) -> None:
    priced = cost(a_job(**request_fields), AttemptOutcome.PREEMPTED, billable_s=1800, training_s=1800)
    assert priced.waste_usd == pytest.approx(expected_waste_s * 2 * 36.0 / 3600)


def test_an_idle_stop_wastes_its_idle_window_and_avoids_the_rest_of_its_max_runtime() -> None:
    priced = cost(a_job(), AttemptOutcome.IDLE_GPU, billable_s=1800, training_s=1800, idle_window_s=900)
    assert priced.waste_usd == pytest.approx(900 * 2 * 36.0 / 3600)
    assert priced.idle_stop_avoided_usd == pytest.approx((7200 - 1800) * 2 * 36.0 / 3600)


def test_an_unpriced_type_makes_every_figure_unknown_never_zero() -> None:
    priced = cost(
        a_job({"ml.p5.48xlarge": 1, "ml.trn1.32xlarge": 1}), AttemptOutcome.COMPLETED, billable_s=60, training_s=60
    )
    assert priced.spend_usd is None
    assert priced.on_demand_equivalent_usd is None
    assert priced.waste_usd is None
    assert hourly_rate({"ml.trn1.32xlarge": 1}, PRICES) is None


def test_a_heterogeneous_job_pays_each_group_at_its_own_price() -> None:
    assert hourly_rate({"ml.p5.48xlarge": 1, "ml.g5.xlarge": 3}, PRICES) == pytest.approx(39.0)


@given(
    billable=st.one_of(st.none(), st.integers(min_value=-10, max_value=10**7)),
    training=st.one_of(st.none(), st.integers(min_value=-10, max_value=10**7)),
    outcome=st.sampled_from(list(AttemptOutcome)),
    spot=st.booleans(),
    idle_window=st.integers(min_value=0, max_value=10**6),
)
def test_no_figure_is_ever_negative_and_waste_never_exceeds_spend(
    billable: int | None, training: int | None, outcome: AttemptOutcome, spot: bool, idle_window: int
) -> None:
    priced = cost(
        a_job(EnableManagedSpotTraining=spot),
        outcome,
        billable_s=billable,
        training_s=training,
        idle_window_s=idle_window,
    )
    figures = [
        priced.spend_usd,
        priced.on_demand_equivalent_usd,
        priced.spot_savings_usd,
        priced.waste_usd,
        priced.idle_stop_avoided_usd,
    ]
    assert all(value is not None and value >= 0 for value in figures)
    assert priced.waste_usd is not None and priced.spend_usd is not None
    assert priced.waste_usd <= priced.spend_usd + 1e-9


@pytest.mark.parametrize(
    ("expected_duration_s", "max_runtime_s", "seconds", "ceiling"),
    [
        (3600, 7200, 3600, False),
        (None, 7200, 7200, True),
        (None, None, SAGEMAKER_DEFAULT_MAX_RUNTIME_S, True),
    ],
    ids=["expected duration", "max runtime as a ceiling", "SageMaker's default max runtime"],
)
def test_a_jobs_estimate_uses_its_expected_duration_else_a_ceiling(
    expected_duration_s: int | None, max_runtime_s: int | None, seconds: int, ceiling: bool
) -> None:
    job = replace(a_job(), expected_duration_s=expected_duration_s, max_runtime_s=max_runtime_s)
    estimate = estimated_cost(job, PRICES)
    assert estimate is not None
    assert (estimate.seconds, estimate.ceiling) == (seconds, ceiling)
    assert estimate.usd == pytest.approx(seconds * 72.0 / 3600)


def test_an_unpriced_job_has_no_estimate() -> None:
    assert estimated_cost(a_job({"ml.trn1.32xlarge": 1}), PRICES) is None


def test_a_running_attempt_accrues_from_its_start_and_a_closed_one_accrues_nothing() -> None:
    running = replace(a_job(), attempts=(Attempt(1, "train-abc-1", T0),))
    assert accrued_cost(running, T0 + timedelta(minutes=30), PRICES) == pytest.approx(36.0)
    assert accrued_cost(running, T0 - timedelta(minutes=5), PRICES) == 0
    closed = replace(a_job(), attempts=(ended(AttemptOutcome.COMPLETED),))
    assert accrued_cost(closed, T0 + timedelta(hours=5), PRICES) == 0
    assert accrued_cost(replace(running, demand={"ml.trn1.32xlarge": 1}), T0, PRICES) is None
