"""Training plan pools in a pass: nothing starts there outside a window (a job waiting for one is told
when it opens), the jobs running there are stopped `stop_margin_s` before the window ends, and a plan
pool is never over-committed; start estimates wait for the window's opening."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from smq_lambda.domain.config.plan_document import PlanWindow, TrainingPlan, plan_pools
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.forecast.queue_replay import Replay
from smq_lambda.scheduling.actions import ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.plan_windows import boundaries, in_force
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from tests.scheduling.builders import NOW, P5, queue

ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved"
OPENS = NOW + timedelta(hours=1)
PLAN = TrainingPlan(
    name="p5-reserved",
    arn=ARN,
    instance_type=P5,
    instances=4,
    windows=(
        PlanWindow(OPENS, OPENS + timedelta(hours=2)),
        PlanWindow(NOW + timedelta(hours=5), NOW + timedelta(hours=6)),
    ),
    stop_margin_s=900,
)
POOL = PLAN.pool
ON_PLAN = Placement(P5, 2, pool=POOL, training_plan_arns=(ARN,), training_plan_arn=ARN)
ON_DEMAND = Placement(P5, 2)
CONFIG = SchedulerConfig(pools={P5: 2, **plan_pools({PLAN.name: PLAN})}, training_plans={PLAN.name: PLAN})


def on_plan(job: Job, *placements: Placement) -> Job:
    """`job` as submission makes it when it names the plan: its preferences bound, listed under the first."""
    attempt = job.current_attempt
    if attempt is None or not job.is_live:
        return replace(job, placements=placements, demand=placements[0].demand)
    live = replace(attempt, placement=placements[0])
    return replace(job, placements=placements, demand=placements[0].demand, attempts=(*job.attempts[:-1], live))


def snapshot_of(*jobs: Job) -> Snapshot:
    return Snapshot(jobs=jobs)


def pending(name: str, *placements: Placement, priority: int = 0) -> Job:
    job = next(job for job in queue().pending(name, priority=priority).build().jobs)
    return on_plan(job, *placements)


def running(name: str, *, started_at: datetime = OPENS) -> Job:
    job = next(job for job in queue().running(name, started_at=started_at).build().jobs)
    return on_plan(job, ON_PLAN)


def reasons(actions: list) -> dict[str, str]:
    return {action.job_name: action.reason for action in actions if isinstance(action, ExplainWait)}


def started(actions: list) -> dict[str, Placement | None]:
    return {action.job_name: action.placement for action in actions if isinstance(action, StartJob)}


def stopped(actions: list) -> dict[str, str]:
    return {action.job_name: action.reason for action in actions if isinstance(action, PreemptJob)}


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (NOW, "training plan p5-reserved: next window opens 2025-03-01T11:00:00Z"),
        (OPENS - timedelta(seconds=1), "training plan p5-reserved: next window opens 2025-03-01T11:00:00Z"),
        (
            OPENS + timedelta(hours=2) - timedelta(seconds=900),
            "training plan p5-reserved: next window opens 2025-03-01T15:00:00Z",
        ),
        (
            NOW + timedelta(hours=7),
            (
                "training plan p5-reserved: no window opens after 2025-03-01T17:00:00Z (its last closed at "
                "2025-03-01T15:45:00Z, 15 min before its end)"
            ),
        ),
    ],
    ids=["before", "a second before", "in the stop margin", "after the last"],
)
def test_outside_a_window_nothing_starts_and_the_reason_names_the_next_opening(now: datetime, expected: str) -> None:
    actions = decide(snapshot_of(pending("planned", ON_PLAN)), now, CONFIG)
    assert started(actions) == {}
    assert reasons(actions) == {"planned": expected}


@pytest.mark.parametrize(
    "now", [OPENS, OPENS + timedelta(hours=2) - timedelta(seconds=901)], ids=["opens", "last second"]
)
def test_inside_a_window_it_starts_on_the_plan(now: datetime) -> None:
    actions = decide(snapshot_of(pending("planned", ON_PLAN)), now, CONFIG)
    assert started(actions) == {"planned": ON_PLAN}


def test_a_job_waiting_for_a_window_blocks_nothing() -> None:
    actions = decide(snapshot_of(pending("planned", ON_PLAN, priority=9), pending("later", ON_DEMAND)), NOW, CONFIG)
    assert started(actions) == {"later": ON_DEMAND}


def test_a_flexible_job_runs_at_another_preference_while_its_plan_is_closed() -> None:
    actions = decide(snapshot_of(pending("flex", ON_PLAN, ON_DEMAND)), NOW, CONFIG)
    assert started(actions) == {"flex": ON_DEMAND}


def test_a_flexible_job_waiting_everywhere_names_the_window_for_its_plan_preference() -> None:
    busy = next(job for job in queue().running("busy", priority=9, needs={P5: 2}).build().jobs)
    actions = decide(snapshot_of(busy, pending("flex", ON_PLAN, ON_DEMAND)), NOW, CONFIG)
    assert (
        "1. 2 × ml.p5.48xlarge in plan:p5-reserved: training plan p5-reserved: next window opens"
        in reasons(actions)["flex"]
    )


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (OPENS + timedelta(hours=1), {}),
        (OPENS + timedelta(hours=2) - timedelta(seconds=901), {}),
        (
            OPENS + timedelta(hours=2) - timedelta(seconds=900),
            {
                "run": "training plan p5-reserved's window ends at 2025-03-01T13:00:00Z; stopped 15 min before so it checkpoints"
            },
        ),
    ],
    ids=["inside", "a second before the margin", "at the margin"],
)
def test_a_running_job_is_stopped_stop_margin_before_its_window_ends(now: datetime, expected: dict[str, str]) -> None:
    assert stopped(decide(snapshot_of(running("run")), now, CONFIG)) == expected


def test_the_instances_of_a_stopped_job_are_not_started_on_before_the_next_window() -> None:
    margin = OPENS + timedelta(hours=2) - timedelta(seconds=600)
    actions = decide(snapshot_of(running("run"), pending("next", ON_PLAN)), margin, CONFIG)
    assert set(stopped(actions)) == {"run"}
    assert started(actions) == {}


def test_in_force_is_idempotent_and_leaves_other_pools() -> None:
    closed = in_force(CONFIG, NOW)
    assert closed.pools == {P5: 2, POOL: 0}
    assert in_force(closed, OPENS).pools == {P5: 2, POOL: 4}
    assert in_force(closed, NOW) == closed


def test_a_start_estimate_waits_for_the_window_to_open() -> None:
    replay = Replay(snapshot_of(pending("planned", ON_PLAN)), NOW, CONFIG, {"planned": 600.0}, ["planned"])
    replay.play()
    assert replay.started == {"planned": 3600.0}


def test_a_start_estimate_resumes_a_stopped_job_at_the_next_window() -> None:
    """A job that needs longer than the rest of its window is stopped at the margin, and resumes when
    the next window opens; a job behind it starts then only if room is left."""
    config = replace(CONFIG, training_plans={PLAN.name: replace(PLAN, instances=2)}, pools={P5: 2, POOL: 2})
    jobs = (running("long"), pending("after", ON_PLAN))
    now = OPENS + timedelta(minutes=30)
    replay = Replay(snapshot_of(*jobs), now, config, {"long": 4 * 3600.0, "after": 600.0}, ["after"])
    replay.play()
    assert replay.started == {"after": (NOW + timedelta(hours=5) - now).total_seconds()}


WINDOWS = st.lists(st.integers(min_value=1, max_value=6), min_size=2, max_size=8).map(
    lambda gaps: [NOW + timedelta(minutes=30 * sum(gaps[: index + 1])) for index in range(len(gaps))]
)


@st.composite
def plans_and_queues(draw: st.DrawFn) -> tuple[SchedulerConfig, Snapshot, datetime]:
    edges = draw(WINDOWS)
    pairs = [PlanWindow(edges[index], edges[index + 1]) for index in range(0, len(edges) - 1, 2)]
    margin = draw(st.sampled_from([0, 60, 900]))
    plan = replace(PLAN, windows=tuple(pairs), instances=draw(st.integers(1, 6)), stop_margin_s=margin)
    config = SchedulerConfig(pools={P5: 2, plan.pool: plan.instances}, training_plans={plan.name: plan})
    now = draw(st.sampled_from([NOW, *edges, *(plan.closes(window) for window in pairs)])) + timedelta(
        seconds=draw(st.sampled_from([-1, 0, 1]))
    )
    jobs: list[Job] = []
    held = 0
    for index in range(draw(st.integers(0, 6))):
        count = draw(st.integers(1, plan.instances))
        placement = replace(ON_PLAN, count=count)
        if draw(st.booleans()) and held + count <= plan.instances:
            held += count
            job = next(job for job in queue().running(f"r{index}", started_at=NOW).build().jobs)
        else:
            job = next(job for job in queue().pending(f"p{index}", priority=draw(st.integers(0, 3))).build().jobs)
        jobs.append(on_plan(job, placement, *([ON_DEMAND] if draw(st.booleans()) else [])))
    return config, Snapshot(jobs=tuple(jobs)), now


@settings(max_examples=settings.default.max_examples * 150 // 100, deadline=None)
@given(plans_and_queues())
def test_plan_pools_start_only_inside_a_window_stop_by_its_close_and_are_never_over_committed(
    case: tuple[SchedulerConfig, Snapshot, datetime],
) -> None:
    config, snapshot, now = case
    plan = next(iter(config.training_plans.values()))
    actions = decide(snapshot, now, config)
    in_plan = [
        placement for placement in started(actions).values() if placement is not None and placement.pool == plan.pool
    ]
    live = {job.name: job for job in snapshot.jobs if job.state in (JobState.STARTING, JobState.RUNNING)}
    if plan.open_window(now) is None:
        assert in_plan == []
        assert set(stopped(actions)) == set(live)
    else:
        assert not [reason for reason in stopped(actions).values() if "training plan" in reason]
        held = sum(job.demand.get(plan.pool, 0) for job in live.values())
        assert held + sum(placement.count for placement in in_plan) <= plan.instances


def test_boundaries_are_every_opening_and_close_after_a_moment() -> None:
    assert boundaries(CONFIG, OPENS) == [
        OPENS + timedelta(hours=2) - timedelta(seconds=900),
        NOW + timedelta(hours=5),
        NOW + timedelta(hours=6) - timedelta(seconds=900),
    ]
