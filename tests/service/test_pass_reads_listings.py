"""A pass reads a job that may use several pools through each pool's front (its listing items:
adapters/pending_listing.py), so a deep backlog in its first pool no longer hides it from the
others; read in two fronts, it is decided over once. Its reason names its place in each."""

from __future__ import annotations

from dataclasses import replace

from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import placements_of
from smq_lambda.service.queue_api import QueueService

from tests.service.harness import POOL, World, queued_job
from tests.support.fakes import RecordingTrigger

OTHER = "ml.g5.48xlarge"
BACKLOG = 40
"""More pending jobs in POOL than a pass reads of it (scheduling/queue_front.py)."""


def _flexible(world: World, name: str, *types: str) -> None:
    """A pending job preferring one instance of each of `types`, in order, submitted now."""
    world.clock.advance(seconds=1)
    pinned = queued_job(name, priority=0, submitted_at=world.clock())
    request = {**pinned.request, "ResourceConfig": {"InstancePreferences": [{"InstanceType": kind} for kind in types]}}
    placements = placements_of(request)
    world.store.create(replace(pinned, request=request, placements=placements, demand=placements[0].demand))


def test_a_flexible_job_behind_its_first_pools_backlog_starts_in_its_second() -> None:
    world = World(capacity={POOL: 1, OTHER: 1})
    world.submit("holder", 9)
    for index in range(BACKLOG):
        world.clock.advance(seconds=1)
        world.store.create(queued_job(f"backlog-{index}", priority=0, submitted_at=world.clock()))
    _flexible(world, "flexible", POOL, OTHER)

    world.kick()

    flexible = world.job("flexible")
    assert flexible.state is JobState.STARTING
    assert flexible.where.selected is not None and flexible.where.selected.instance_type == OTHER
    assert world.store.pending_front(OTHER, 10) == []


def test_a_job_read_through_two_fronts_is_decided_over_once() -> None:
    world = World(capacity={POOL: 1, OTHER: 1})
    _flexible(world, "flexible", POOL, OTHER)

    world.kick()

    flexible = world.job("flexible")
    assert flexible.state is JobState.STARTING and flexible.attempt_count == 1
    assert flexible.where.selected is not None and flexible.where.selected.instance_type == POOL
    assert len(world.sagemaker.jobs) == 1


def test_a_waiting_job_is_placed_in_each_pool_it_may_use() -> None:
    """Both pools full, each with a head; the flexible job waits third in its first pool and second
    in its other: its position is the first, its reason names both (one count per pool)."""
    world = World(capacity={POOL: 1, OTHER: 1})
    world.submit("holder", 9)
    world.submit("other-holder", 9, pool=OTHER)
    world.submit("head", 5)
    world.submit("second", 5)
    world.submit("other-head", 5, pool=OTHER)
    _flexible(world, "flexible", POOL, OTHER)
    world.kick()
    api = QueueService(
        world.store, world.config, RecordingTrigger(), pass_summaries=world.pass_summaries, clock=world.clock
    )

    waiting = api.get("flexible")
    (listed,) = [entry for entry in api.list_jobs(states=[JobState.PENDING]).jobs if entry.job.name == "flexible"]

    assert waiting.position == listed.position == 3
    assert (
        waiting.reason
        == listed.reason
        == (
            f"2 jobs ahead in {POOL} (head is first and waits for instances), "
            f"1 job ahead in {OTHER} (other-head is first and waits for instances)"
        )
    )
    assert api.get("second").reason == f"1 job ahead in {POOL}; head is first and waits for instances"
