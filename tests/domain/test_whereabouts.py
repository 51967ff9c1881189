"""Where a job is listed, waits, runs and what it is priced at: `Job.where` (domain/jobs/whereabouts.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.jobs.whereabouts import Whereabouts
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import Purchase, spot_pool

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
G5, P5, C5 = "ml.g5.xlarge", "ml.p5.48xlarge", "ml.c5.xlarge"
PLAN_POOL = "plan:p5-reserved"


def pending(demand: dict[str, int], **fields: Any) -> Job:
    return Job(name="train", job_id="0" * 32, state=JobState.PENDING, priority=0, submitted_at=T0, demand=demand,
               owner="arn:aws:iam::123456789012:user/alice", **fields)  # fmt: skip


FLEXIBLE = pending({PLAN_POOL: 2}, placements=(Placement(P5, 2, pool=PLAN_POOL), Placement(G5, 4)))


def test_a_pending_flexible_job_is_listed_under_its_first_preference_and_waits_in_each_ones_pool() -> None:
    assert FLEXIBLE.where == Whereabouts(
        listed={PLAN_POOL: 2},
        pools=(PLAN_POOL, G5),
        instance_types={P5: 2},
        selected=None,
        pool=PLAN_POOL,
        instances=2,
    )


def test_a_started_job_is_priced_at_its_attempts_placement_and_listed_there_again_when_requeued() -> None:
    started = lifecycle.start(FLEXIBLE, T0, reason="fits", placement=Placement(G5, 4))
    assert started.where == Whereabouts(
        listed={PLAN_POOL: 2},
        pools=(PLAN_POOL, G5),
        instance_types={G5: 4},
        selected=Placement(G5, 4),
        pool=G5,
        instances=4,
    )
    requeued = lifecycle.requeue(
        lifecycle.mark_running(started, T0), T0, outcome=AttemptOutcome.PREEMPTED, reason="preempted"
    )
    assert (requeued.where.pool, requeued.where.instance_types, requeued.where.selected) == (
        PLAN_POOL,
        {P5: 2},
        Placement(G5, 4),
    )


def test_a_pinned_spot_job_in_a_spot_pool_is_listed_and_priced_under_its_type() -> None:
    job = pending({G5: 1}, purchase=Purchase.SPOT)
    started = lifecycle.start(job, T0, reason="fits", placement=Placement(G5, 1, pool=spot_pool(G5), spot=True))
    assert started.where.listed == {G5: 1} and started.where.pools == (G5,)
    assert started.where.instance_types == {G5: 1}
    assert (started.where.pool, started.where.instances) == (spot_pool(G5), 1)


def test_a_job_of_instance_groups_waits_in_each_groups_pool() -> None:
    job = pending({P5: 2, C5: 4})
    assert job.where == Whereabouts(
        listed={P5: 2, C5: 4}, pools=(P5, C5), instance_types={P5: 2, C5: 4}, selected=None, pool=P5, instances=2
    )
    started = lifecycle.start(job, T0, reason="fits")
    assert started.where.selected is None and started.where.instance_types == {P5: 2, C5: 4}
