"""Stops at a training plan's window end through the scheduler handler, with fakes: they are not
preemptions. The attempt closes as `plan-window-closed`, the job's reason and history say so, its
owner hears of it as such, and `max_preemptions` does not count it, so a job stopped at many window
ends is still preempted for a job of higher priority."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from smq_lambda.domain.config.plan_document import PlanWindow, TrainingPlan, plan_pools
from smq_lambda.domain.config.teams import PreemptionRules
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.governance.notices import NoticeAction

from tests.service.harness import POOL, World, queued_job
from tests.support.fakes import EPOCH

ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved"
WINDOWS = tuple(PlanWindow(EPOCH + timedelta(hours=4 * n), EPOCH + timedelta(hours=4 * n + 2)) for n in range(1, 5))
PLAN = TrainingPlan("p5-reserved", ARN, POOL, instances=1, windows=WINDOWS, stop_margin_s=900)
ON_PLAN = Placement(POOL, 1, pool=PLAN.pool, training_plan_arns=(ARN,), training_plan_arn=ARN)


def planned_world() -> World:
    world = World(capacity={POOL: 0, **plan_pools({PLAN.name: PLAN})})
    world.config.config = replace(
        world.config.config,
        training_plans={PLAN.name: PLAN},
        preemption=PreemptionRules(max_preemptions=3),
    )
    return world


def submit_on_plan(world: World, name: str, priority: int) -> Job:
    world.clock.advance(seconds=1)
    job = queued_job(name, priority=priority, submitted_at=world.clock())
    created = world.store.create(replace(job, placements=(ON_PLAN,), demand=ON_PLAN.demand))
    world.kick()
    return created


def run_through_window(world: World, name: str, window: PlanWindow) -> None:
    """`name` starts when `window` opens, trains, and is stopped before it closes."""
    world.clock.set(window.start)
    world.kick()
    world.progress(name, "InProgress")
    assert world.job(name).state is JobState.RUNNING
    world.clock.set(PLAN.closes(window))
    world.kick()
    assert world.job(name).state is JobState.PREEMPTING
    world.finish_stops()
    assert world.job(name).state is JobState.PENDING


def test_a_job_stopped_at_three_window_ends_is_still_preempted_for_a_higher_priority_job() -> None:
    world = planned_world()
    submit_on_plan(world, "low", priority=0)
    for window in WINDOWS[:3]:
        run_through_window(world, "low", window)
    world.clock.set(WINDOWS[3].start)
    world.kick()
    world.progress("low", "InProgress")

    submit_on_plan(world, "urgent", priority=100)

    low = world.job("low")
    assert low.state is JobState.PREEMPTING, low.reason
    assert low.reason is not None and low.reason.startswith("preempted for urgent")
    assert low.attempt_outcomes == {AttemptOutcome.PLAN_WINDOW_CLOSED: 3}


def test_a_window_end_stop_says_so_in_the_reason_the_attempt_the_history_and_the_notice() -> None:
    world = planned_world()
    submit_on_plan(world, "low", priority=0)
    world.clock.set(WINDOWS[0].start)
    world.kick()
    world.progress("low", "InProgress")

    world.clock.set(PLAN.closes(WINDOWS[0]))
    world.kick()
    stopping = world.job("low")
    world.finish_stops()

    why = "training plan p5-reserved's window ends at 2024-01-01T06:00:00Z; stopped 15 min before so it checkpoints"
    assert (stopping.state, stopping.reason) == (JobState.PREEMPTING, why)
    low = world.job("low")
    assert (low.attempts[0].outcome, low.attempts[0].reason) == (AttemptOutcome.PLAN_WINDOW_CLOSED, why)
    assert (low.history[-1].by, low.history[-1].what) == ("scheduler", why)
    assert low.reason == "training plan p5-reserved: next window opens 2024-01-01T08:00:00Z"
    assert [notice.action for notice in world.notifier.sent] == [NoticeAction.PLAN_WINDOW_CLOSED]
