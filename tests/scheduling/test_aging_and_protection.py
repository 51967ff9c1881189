"""Anti-starvation (aging) and the preemption rules, in the queue without teams."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.config.teams import Aging, PreemptionRules
from smq_lambda.scheduling.actions import ExplainWait, StartJob
from smq_lambda.scheduling.aging import boost
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import SchedulerConfig

from .builders import NOW, P5, T0, JobBuilder, queue
from .test_decide_cases import summary


@pytest.mark.parametrize(
    ("waited_h", "per_hour", "cap", "points"),
    [(0.5, 1, 5, 0), (1, 1, 5, 1), (3.9, 1, 5, 3), (10, 1, 5, 5), (2, 0.5, 5, 1), (10, 0, 5, 0), (10, 1, 0, 0)],
)
def test_the_boost_is_whole_points_per_hour_up_to_the_cap(
    waited_h: float, per_hour: float, cap: int, points: int
) -> None:
    job = JobBuilder("old", NOW - timedelta(hours=waited_h)).build()

    earned = boost(job, NOW, Aging(per_hour=per_hour, cap=cap))

    assert (earned.points if earned else 0) == points


def test_a_preempted_job_ages_from_the_end_of_its_last_attempt() -> None:
    job = JobBuilder("resumed", NOW - timedelta(hours=10)).past_attempts(1).build()
    ended = job.attempts[-1].ended_at
    assert ended is not None

    earned = boost(job, ended + timedelta(hours=2), Aging(per_hour=1, cap=5))

    assert earned is not None and earned.points == 2


def test_an_aged_job_overtakes_a_newer_higher_priority_one_and_says_why() -> None:
    snapshot = queue().pending("old", 0).pending("new", 1).build()  # submitted T0 and T0+1min; NOW is T0+1h
    aging = SchedulerConfig(pools={P5: 1}, aging=Aging(per_hour=2, cap=3))

    actions = decide(snapshot, NOW, aging)
    plain = decide(snapshot, NOW, SchedulerConfig(pools={P5: 1}))

    assert summary(actions[0]) == "start old"
    start = next(action for action in actions if isinstance(action, StartJob))
    assert start.reason.endswith("priority 0 + 2 for waiting since 2025-03-01T09:00:00Z (aging)")
    assert summary(plain[0]) == "start new"


@given(
    per_hour=st.floats(0.01, 100),
    cap=st.integers(1, 10),
    first_s=st.integers(0, 30 * 86_400),
    second_s=st.integers(0, 30 * 86_400),
)
def test_what_aging_says_changes_only_with_its_points(per_hour: float, cap: int, first_s: int, second_s: int) -> None:
    """The written reason holds the boost's description: it may change only when the job gains a
    whole point, so aging costs at most `cap` writes per wait, whatever the pass rate."""
    job = JobBuilder("old", T0).build()
    aging = Aging(per_hour=per_hour, cap=cap)
    first, second = (boost(job, T0 + timedelta(seconds=at), aging) for at in (first_s, second_s))

    if (first and first.points) == (second and second.points):
        assert (first and first.describe()) == (second and second.describe())


def test_aging_is_off_by_default() -> None:
    assert boost(JobBuilder("old", T0 - timedelta(days=30)).build(), NOW, Aging()) is None


RULES = PreemptionRules(min_runtime_s=600, max_preemptions=2)


@pytest.mark.parametrize(
    ("name", "running", "expect"),
    [
        (
            "ran long enough: preempted",
            {"started_at": NOW - timedelta(minutes=30)},
            ["preempt low for high", "wait high"],
        ),
        ("within its minimum runtime: protected", {"started_at": NOW - timedelta(minutes=5)}, ["wait high"]),
        ("preempted twice already: protected", {"past_attempts": 2}, ["wait high"]),
        (
            "backfilled: never protected",
            {"started_at": NOW - timedelta(minutes=1), "backfill": True},
            ["preempt low for high", "wait high"],
        ),
    ],
)
def test_the_preemption_rules_protect_running_jobs_from_priority(name: str, running: dict, expect: list[str]) -> None:
    snapshot = queue().running("low", 0, **running).pending("high", 5).build()

    actions = decide(snapshot, NOW, SchedulerConfig(pools={P5: 1}, preemption=RULES))

    assert [summary(action) for action in actions] == expect


def test_a_head_blocked_by_protected_jobs_is_told_so() -> None:
    snapshot = queue().running("low", 0, started_at=NOW - timedelta(minutes=5)).pending("high", 5).build()

    actions = decide(snapshot, NOW, SchedulerConfig(pools={P5: 1}, preemption=RULES))

    wait = next(action for action in actions if isinstance(action, ExplainWait))
    assert "1 lower-priority job protected by the preemption rules" in wait.reason
