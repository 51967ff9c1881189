"""Aging costs at most one write per whole point (issue 19): a head that waits six hours under
`aging: {per_hour: 1, cap: 2}`, with a pass every minute, has its reason rewritten when it gains a
point, not every time the hours it waited change in their first decimal."""

from __future__ import annotations

from dataclasses import replace

from smq_lambda.domain.config.teams import Aging
from smq_lambda.domain.jobs.states import JobState

from tests.service.harness import POOL, World

CAP = 2
PASSES = 6 * 60
"""Six hours, one pass a minute (reconciliation runs every minute)."""
WRITES_BESIDES_AGING = 1
"""A spare, for any other change in what the head is told (none is expected here)."""


def test_a_waiting_head_is_written_once_per_aging_point() -> None:
    world = World(capacity={POOL: 1})
    world.config.config = replace(world.config.config, aging=Aging(per_hour=1, cap=CAP))
    world.submit("holder", priority=9)
    world.progress("holder", "InProgress")
    world.submit("waiter", priority=0)
    first = world.job("waiter")
    assert first.state is JobState.PENDING and first.reason is not None

    for _ in range(PASSES):
        world.later(60)
        world.reconcile()

    waiter = world.job("waiter")
    assert waiter.state is JobState.PENDING and world.job("holder").state is JobState.RUNNING
    assert f"+ {CAP} " in (waiter.reason or ""), waiter.reason
    assert waiter.version - first.version <= CAP + WRITES_BESIDES_AGING
