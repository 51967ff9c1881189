"""Cost figures add up ended attempts: never negative, unpriced never free; each job's spend counts
under its team, owner and configured tags."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.config.teams import UNASSIGNED
from smq_lambda.domain.costs.cost_totals import MAX_TAG_GROUP_BYTES, UNTAGGED, CostFigures, cost_groups, tag_group
from smq_lambda.domain.costs.costs import attempt_cost
from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState

G5 = "ml.g5.xlarge"
ENDED = datetime(2026, 11, 26, 12, tzinfo=UTC)


def a_job(*, team: str | None = "vision", tags: dict[str, str] | None = None, **request: Any) -> Job:
    return Job(
        name="vit",
        job_id="j1",
        state=JobState.COMPLETED,
        priority=0,
        submitted_at=ENDED,
        demand={G5: 2},
        owner="alice",
        team=team,
        max_runtime_s=7200,
        request={"Tags": [{"Key": key, "Value": value} for key, value in (tags or {}).items()], **request},
    )


def an_attempt(outcome: AttemptOutcome) -> Attempt:
    return Attempt(number=1, training_job_name="vit-abc-1", started_at=ENDED, ended_at=ENDED, outcome=outcome)


def test_one_priced_attempt_gives_its_dollars_and_counts_once() -> None:
    cost = attempt_cost(
        a_job(EnableManagedSpotTraining=True),
        an_attempt(AttemptOutcome.COMPLETED),
        billable_s=1800,
        training_s=3600,
        ended_at=ENDED,
        prices={G5: 1.0},
    )

    assert CostFigures.of(cost) == CostFigures(
        spend_usd=1.0, on_demand_equivalent_usd=2.0, spot_savings_usd=1.0, attempts=1, unpriced_attempts=0
    )


def test_an_unpriced_attempt_counts_as_unpriced_and_adds_no_dollars() -> None:
    cost = attempt_cost(
        a_job(), an_attempt(AttemptOutcome.COMPLETED), billable_s=3600, training_s=3600, ended_at=ENDED, prices={}
    )

    assert CostFigures.of(cost) == CostFigures(attempts=1, unpriced_attempts=1)


def test_plus_adds_every_figure() -> None:
    one = CostFigures(1.0, 2.0, 3.0, 4.0, 5.0, 6, 7)
    other = CostFigures(0.5, 0.25, 0.125, 1.0, 2.0, 1, 2)

    assert one.plus(other) == CostFigures(1.5, 2.25, 3.125, 5.0, 7.0, 7, 9)
    assert one.plus(CostFigures()) == one


seconds = st.one_of(st.none(), st.integers(min_value=-10, max_value=10**7))


@given(
    billable_s=seconds,
    training_s=seconds,
    outcome=st.sampled_from(AttemptOutcome),
    spot=st.booleans(),
    checkpoints=st.booleans(),
    price=st.one_of(st.none(), st.floats(min_value=0, max_value=10_000)),
    idle_window_s=st.integers(min_value=-10, max_value=10**5),
    count=st.integers(min_value=1, max_value=20),
)
def test_summed_figures_are_never_negative_and_unpriced_is_never_free(
    billable_s: int | None,
    training_s: int | None,
    outcome: AttemptOutcome,
    spot: bool,
    checkpoints: bool,
    price: float | None,
    idle_window_s: int,
    count: int,
) -> None:
    request: dict[str, Any] = {"EnableManagedSpotTraining": spot}
    if checkpoints:
        request["CheckpointConfig"] = {"S3Uri": "s3://b/c/"}
    cost = attempt_cost(
        a_job(**request),
        an_attempt(outcome),
        billable_s=billable_s,
        training_s=training_s,
        ended_at=ENDED,
        prices={} if price is None else {G5: price},
        idle_window_s=idle_window_s,
    )
    total = CostFigures()
    for _ in range(count):
        total = total.plus(CostFigures.of(cost))

    assert all(getattr(total, part.name) >= 0 for part in fields(total))
    assert total.attempts == count
    assert total.unpriced_attempts == (count if price is None else 0)
    if price is None:
        assert total == CostFigures(attempts=count, unpriced_attempts=count)


@given(
    st.lists(
        st.builds(CostFigures, *[st.floats(min_value=0, max_value=1e6)] * 5, *[st.integers(0, 100)] * 2),
        max_size=8,
    )
)
def test_summing_in_any_order_gives_the_same_counts(parts: list[CostFigures]) -> None:
    forward, backward = CostFigures(), CostFigures()
    for part in parts:
        forward = forward.plus(part)
    for part in reversed(parts):
        backward = backward.plus(part)

    assert (forward.attempts, forward.unpriced_attempts) == (backward.attempts, backward.unpriced_attempts)
    assert forward.spend_usd == pytest.approx(backward.spend_usd)


@pytest.mark.parametrize(
    ("job", "cost_tags", "expected"),
    [
        (a_job(), (), {"team": "vision", "owner": "alice"}),
        (a_job(team=None), (), {"team": UNASSIGNED, "owner": "alice"}),
        (a_job(team=""), (), {"team": UNASSIGNED, "owner": "alice"}),
        (
            a_job(tags={"project": "vit", "cost-center": "42"}),
            ("project", "cost-center"),
            {"team": "vision", "owner": "alice", "tag:project": "vit", "tag:cost-center": "42"},
        ),
        (a_job(tags={"project": "vit"}), ("stage",), {"team": "vision", "owner": "alice", "tag:stage": UNTAGGED}),
        (a_job(tags={"stage": ""}), ("stage",), {"team": "vision", "owner": "alice", "tag:stage": UNTAGGED}),
        (
            a_job(tags={"run": "r" * 256}),
            ("run",),
            {"team": "vision", "owner": "alice", "tag:run": "r" * (MAX_TAG_GROUP_BYTES - 3) + "…"},
        ),
        (
            a_job(tags={"run": "r" * MAX_TAG_GROUP_BYTES}),
            ("run",),
            {"team": "vision", "owner": "alice", "tag:run": "r" * MAX_TAG_GROUP_BYTES},
        ),
    ],
)
def test_a_jobs_groups_are_its_team_owner_and_configured_tags(
    job: Job, cost_tags: tuple[str, ...], expected: dict[str, str]
) -> None:
    assert cost_groups(job, cost_tags) == expected


@pytest.mark.parametrize("value", ["r" * 256, "価" * 256, "😀" * 256, "a" + "価" * 100, "(untagged)"])
def test_a_tag_group_is_cut_between_characters_to_its_bytes_and_cutting_again_changes_nothing(value: str) -> None:
    """Bytes, not characters, are what a DynamoDB item holds: 256 letters of 4 bytes are 1 KB."""
    group = tag_group(value)

    assert len(group.encode()) <= MAX_TAG_GROUP_BYTES
    assert value.startswith(group.removesuffix("…"))
    assert tag_group(group) == group
