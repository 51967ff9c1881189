"""What an invocation measures, as pure functions: stuck jobs and pool usage."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.pass_summary import PoolMeasure
from smq_lambda.scheduling.snapshot import SchedulerConfig, UnpooledPolicy
from smq_lambda.service.pass_measures import STUCK_AFTER, count_stuck, pass_summary

from tests.service.harness import queued_job

NOW = datetime(2024, 1, 1, 12, tzinfo=UTC)
S = JobState


def job(
    name: str, state: JobState, *, changed_ago: timedelta = timedelta(), pool: str = "p", instances: int = 1
) -> Job:
    queued = queued_job(name, priority=0, submitted_at=NOW - timedelta(days=1), pool=pool, instances=instances)
    return replace(queued, state=state, updated_at=NOW - changed_ago)


@pytest.mark.parametrize(
    ("state", "changed_ago", "stuck"),
    [
        (S.STARTING, timedelta(minutes=16), True),
        (S.PREEMPTING, timedelta(hours=3), True),
        (S.STOPPING, timedelta(minutes=15, seconds=1), True),
        (S.STARTING, timedelta(minutes=15), False),
        (S.STOPPING, timedelta(minutes=1), False),
        (S.PENDING, timedelta(days=2), False),
        (S.RUNNING, timedelta(days=2), False),
        (S.COMPLETED, timedelta(days=2), False),
    ],
)
def test_a_job_is_stuck_in_a_passing_state_unchanged_past_the_threshold(
    state: JobState, changed_ago: timedelta, stuck: bool
) -> None:
    assert count_stuck([job("j", state, changed_ago=changed_ago)], NOW) == int(stuck)


def test_stuck_jobs_are_counted_against_the_configured_threshold() -> None:
    jobs = [job(f"j{minutes}", S.STARTING, changed_ago=timedelta(minutes=minutes)) for minutes in (1, 5, 10, 20)]

    assert count_stuck(jobs, NOW) == 1
    assert count_stuck(jobs, NOW, timedelta(minutes=4)) == 3
    assert STUCK_AFTER == timedelta(minutes=15)


def test_a_job_never_written_since_submission_counts_from_its_submission() -> None:
    never_updated = replace(job("j", S.STARTING), updated_at=None)

    assert count_stuck([never_updated], NOW) == 1


def test_usage_lists_configured_pools_then_unpooled_types_in_use_or_awaited() -> None:
    config = SchedulerConfig(pools={"a": 4, "b": 2, "idle": 1}, unpooled=UnpooledPolicy.UNLIMITED)
    live = [
        job("running", S.RUNNING, pool="a", instances=2),
        job("starting", S.STARTING, pool="a"),
        job("stopping", S.STOPPING, pool="b", instances=2),
        job("unpooled", S.RUNNING, pool="y", instances=5),
    ]

    report = pass_summary(live, {"a": 1, "idle": 1, "outside-only": 7}, config, NOW, {"a": "waiting", "x": "elsewhere"})

    assert report.measured_at == NOW
    assert report.pools == (
        PoolMeasure(pool="a", capacity=4, in_use=4, head="waiting"),
        PoolMeasure(pool="b", capacity=2, in_use=2),
        PoolMeasure(pool="idle", capacity=1, in_use=1),
        PoolMeasure(pool="y", capacity=None, in_use=5),
        PoolMeasure(pool="x", capacity=None, in_use=0, head="elsewhere"),
    ), "a type only jobs outside the queue use is not the queue's to show"


def test_an_unpooled_type_under_reject_has_no_capacity() -> None:
    report = pass_summary([job("j", S.RUNNING, pool="x")], {}, SchedulerConfig(pools={}), NOW, {})

    assert report.pools == (PoolMeasure(pool="x", capacity=0, in_use=1),)
