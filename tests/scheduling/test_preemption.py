"""The candidate order and the minimal target set, below the level of a whole pass."""

from __future__ import annotations

from datetime import timedelta

from smq_lambda.scheduling.preemption import (
    is_reclaimable_by,
    least_progress_first,
    preemption_order,
    select_targets,
)

from .builders import G5, NOW, P5, queue


def test_candidates_are_ordered_backfill_priority_latest_start_name() -> None:
    jobs = (
        queue()
        .running("b-old", 0, started_at=NOW - timedelta(hours=3))
        .running("a-new", 0, started_at=NOW - timedelta(hours=1))
        .running("c-new", 0, started_at=NOW - timedelta(hours=1))
        .running("mid", 1, started_at=NOW - timedelta(minutes=1))
        .running("filler", 2, backfill=True)
        .build()
        .jobs
    )

    ordered = [job.name for job in sorted(jobs, key=preemption_order)]

    assert ordered == ["filler", "a-new", "c-new", "b-old", "mid"]


def test_reclaimable_only_below_in_priority_or_backfilled_after() -> None:
    jobs = {
        job.name: job
        for job in queue()
        .running("early-bf", 1, backfill=True)
        .pending("head", 1)
        .running("equal", 1)
        .running("late-bf", 1, backfill=True)
        .running("lower", 0)
        .preempting("releasing", 0)
        .build()
        .jobs
    }

    reclaimable = sorted(name for name, job in jobs.items() if is_reclaimable_by(job, jobs["head"]))

    assert reclaimable == ["late-bf", "lower"]


def test_no_targets_when_all_candidates_together_are_not_enough() -> None:
    candidates = queue().running("a", 0).running("b", 0).build().jobs

    assert select_targets({P5: 3}, candidates) is None


def test_targets_cover_every_short_pool_and_are_minimal() -> None:
    """Greedy takes p5-only, then both (which covers g5); p5-only is then no longer needed."""
    candidates = (
        queue()
        .running("p5-only", 0, {P5: 1})
        .running("both", 1, {P5: 1, G5: 1})
        .running("g5-only", 2, {G5: 1})
        .running("unrelated", 0, {"ml.c5.xlarge": 4})
        .build()
        .jobs
    )

    targets = select_targets({P5: 1, G5: 1}, candidates)

    assert targets is not None and [job.name for job in targets] == ["both"]


def test_reclaim_takes_least_progress_first_and_only_eligible_candidates() -> None:
    """The reclaim rule's key ignores priority; `eligible` stops taking from a team at its quota."""
    candidates = (
        queue()
        .running("old-high", 9, started_at=NOW - timedelta(hours=3))
        .running("new-low", 0, started_at=NOW - timedelta(hours=1))
        .running("newest-capped", 0, started_at=NOW - timedelta(minutes=1))
        .build()
        .jobs
    )

    targets = select_targets(
        {P5: 2},
        candidates,
        order=least_progress_first,
        eligible=lambda job, _chosen: job.name != "newest-capped",
    )

    assert targets is not None and [job.name for job in targets] == ["new-low", "old-high"]
