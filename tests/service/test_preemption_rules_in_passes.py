"""What a pass writes when the preemption rules matter, and the start estimates it publishes."""

from __future__ import annotations

from dataclasses import replace

from smq_lambda.domain.config.teams import PreemptionRules
from smq_lambda.domain.jobs.lifecycle import SCHEDULER
from smq_lambda.domain.jobs.states import JobState

from tests.service.harness import World


def preempt_low_for_high(world: World, name: str) -> None:
    """`low` runs; `name`, of higher priority, arrives and takes its place; its stop lands."""
    world.submit(name, priority=5)
    world.finish_stops()
    world.progress(name, "Completed")


def test_the_preemption_that_spends_the_budget_is_in_the_jobs_history_and_the_next_is_refused() -> None:
    world = World(capacity={"ml.p5.48xlarge": 1})
    world.config.config = replace(world.config.config, preemption=PreemptionRules(max_preemptions=2))
    world.submit("low", priority=0)
    world.progress("low", "InProgress")
    for round_ in range(2):
        preempt_low_for_high(world, f"high-{round_}")
        world.progress("low", "InProgress")

    world.submit("high-2", priority=5)

    low = world.job("low")
    notes = [change for change in low.history if change.by == SCHEDULER]
    assert [note.what for note in notes] == [
        (
            "preempted 2 times (max_preemptions 2): from now on stopped only to give back capacity it borrowed, "
            "never for priority"
        )
    ]
    assert low.state is JobState.RUNNING
    assert "protected by the preemption rules" in (world.job("high-2").reason or "")


def test_each_pass_publishes_start_estimates_for_the_jobs_it_saw() -> None:
    world = World(capacity={"ml.p5.48xlarge": 1})
    world.submit("first", priority=0)
    world.progress("first", "InProgress")

    world.submit("second", priority=0)

    report = world.pass_summaries.latest()
    assert report is not None
    assert set(report.estimates) == {"second"}
