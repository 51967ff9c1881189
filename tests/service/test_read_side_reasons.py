"""The API shows the reason the last pass wrote for each job it explained (`Decision.explained`,
published with the pool usage), and a place in the queue, computed on read, for the jobs that merely
wait behind a head. It re-derives no rule: a job a gate held reads the gate's reason, whichever
gate, where before a job beyond its team's reach read "0 jobs ahead"."""

from __future__ import annotations

from dataclasses import replace

from smq_lambda.domain.config.teams import Quota, Sharing, Teams
from smq_lambda.domain.jobs.model import Job
from smq_lambda.service.queue_api import QueueService

from tests.service.harness import POOL, World, queued_job
from tests.support.fakes import RecordingTrigger

RESERVED = Teams(
    quotas={
        "a": Quota(instances={POOL: 2}, sharing=Sharing.RESERVE),
        "b": Quota(instances={POOL: 2}, sharing=Sharing.RESERVE),
    }
)
"""Teams a and b each reserve 2 of the pool's 4 instances: neither may ever hold more than 2."""
BEYOND_REACH = (
    f"needs 3 instances of {POOL}, more than a may ever hold there (2: its quota, what its sharing and "
    "borrow limit let it borrow, less the quotas other teams reserve)"
)


def world_with_reserving_teams() -> World:
    world = World(capacity={POOL: 4})
    world.config.config = replace(world.config.config, teams=RESERVED)
    return world


def create(world: World, name: str, team: str, instances: int = 1, priority: int = 0) -> Job:
    world.clock.advance(seconds=1)
    job = queued_job(name, priority=priority, submitted_at=world.clock(), instances=instances)
    return world.store.create(replace(job, team=team), register_team=True)


def api(world: World) -> QueueService:
    return QueueService(
        world.store, world.config, RecordingTrigger(), pass_summaries=world.pass_summaries, clock=world.clock
    )


def test_a_job_beyond_its_teams_reach_reads_the_reason_the_pass_gave_it() -> None:
    world = world_with_reserving_teams()
    create(world, "too-big-for-a", "a", instances=3)

    world.kick()

    read = api(world).get("too-big-for-a")
    assert read.reason == BEYOND_REACH
    latest = world.pass_summaries.latest()
    assert latest is not None and latest.explained == frozenset({"too-big-for-a"})


def test_a_job_behind_a_head_reads_its_place_and_a_job_the_pass_explained_since_reads_its_reason() -> None:
    world = world_with_reserving_teams()
    for name in ("a-run-0", "a-run-1", "a-head", "a-behind"):
        create(world, name, "a", priority=5)
    world.kick()

    service = api(world)
    assert service.get("a-behind").reason == f"1 job ahead in {POOL}; a-head is first and waits for instances"
    assert service.get("a-head").reason == world.job("a-head").reason

    service.cancel("a-head", caller=world.job("a-head").owner)
    world.kick()

    assert api(world).get("a-behind").reason == world.job("a-behind").reason != ""


def test_a_report_of_the_last_release_shows_every_stored_reason() -> None:
    """A report that does not say which jobs the pass explained: the stored reason, as written."""
    world = world_with_reserving_teams()
    for name in ("a-run-0", "a-run-1", "a-head", "a-behind"):
        create(world, name, "a", priority=5)
    world.kick()
    latest = world.pass_summaries.latest()
    assert latest is not None
    world.pass_summaries.publish(replace(latest, explained=None))

    assert api(world).get("a-behind").reason == world.job("a-behind").reason
