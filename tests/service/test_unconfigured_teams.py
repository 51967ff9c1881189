"""Jobs whose team tag names no configured team (a team removed since they were queued, or quotas
configured after) run as unassigned and say so. Those queued while quotas were configured are read
by every pass however long the other teams' backlog: submission then registers their team tag value,
and a pass reads the pending-by-team partition of each value the configuration does not name with
the unassigned group's bound."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.config.teams import Quota, Sharing, Teams
from smq_lambda.domain.jobs.model import Job, order_key
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.service import passes

from tests.service.harness import POOL, World, queued_job
from tests.support.fakes import InMemoryJobStore

CAPACITY = 4
RESERVING_A = Teams(quotas={"a": Quota(instances={POOL: 2}, sharing=Sharing.RESERVE)})
"""Team a reserves 2 of the 4 instances and never borrows; the unassigned group has the other 2."""
REMOVED = "gone"


def create(world: World, name: str, team: str | None, priority: int = 0, instances: int = 1) -> Job:
    """A job as submission queued it while quotas were configured, naming its team then."""
    world.clock.advance(seconds=1)
    job = queued_job(name, priority=priority, submitted_at=world.clock(), instances=instances)
    return world.store.create(replace(job, team=team), register_team=True)


def with_teams(world: World, teams: Teams) -> None:
    world.config.config = replace(world.config.config, teams=teams)


def team_a_at_quota_with_a_backlog(depth: int) -> World:
    """Team a runs its quota (2 of 4) with `depth` jobs waiting at priority 5; then one job of a
    team that was configured when it was queued and has been removed since, at priority 0."""
    world = World(capacity={POOL: CAPACITY})
    with_teams(world, RESERVING_A)
    for index in range(2):
        create(world, f"a-run-{index}", "a", priority=5)
    world.kick()
    for index in range(2):
        world.progress(f"a-run-{index}", "InProgress")
    for index in range(depth):
        create(world, f"a-wait-{index:04d}", "a", priority=5)
    create(world, "removed-team-job", REMOVED)
    return world


def test_a_removed_teams_job_behind_another_teams_backlog_starts_as_unassigned() -> None:
    world = team_a_at_quota_with_a_backlog(200)

    world.kick()

    job = world.job("removed-team-job")
    assert job.state is JobState.STARTING, "the unassigned quota (2) is idle and team a may not borrow it"
    assert world.job("a-wait-0000").state is JobState.PENDING


def test_a_removed_teams_pending_job_says_it_runs_as_unassigned() -> None:
    world = team_a_at_quota_with_a_backlog(3)
    for index in range(2):  # the unassigned group's 2 instances are taken
        create(world, f"untagged-{index}", None, priority=9)
    world.kick()

    reason = world.job("removed-team-job").reason

    assert world.job("removed-team-job").state is JobState.PENDING
    assert reason is not None and reason.startswith(f"team '{REMOVED}' is no longer configured; runs as unassigned; ")


def test_a_removed_team_is_forgotten_an_hour_after_its_registration_once_none_of_its_jobs_wait() -> None:
    world = team_a_at_quota_with_a_backlog(0)
    store: InMemoryJobStore = world.store  # type: ignore[assignment]
    world.kick()
    assert world.job("removed-team-job").state is JobState.STARTING

    world.later(3500)
    world.kick()
    assert REMOVED in store.in_use().team_tags, "within the hour a submission may still be on its way"

    world.later(200)
    world.kick()
    assert set(store.in_use().team_tags) == {"a"}, "a configured team is never forgotten"


def test_a_removed_team_with_a_pending_job_is_not_forgotten() -> None:
    world = team_a_at_quota_with_a_backlog(0)
    for index in range(2):
        create(world, f"untagged-{index}", None, priority=9)
    world.kick()
    world.later(7200)
    world.kick()

    assert world.job("removed-team-job").state is JobState.PENDING
    assert REMOVED in world.store.in_use().team_tags


# ------------------------------------------------------------------------ the property

TAGS = st.sampled_from([None, "a", "b", "c", "d"])
CONFIGURED = st.sets(st.sampled_from(["a", "b", "c"]), min_size=1)
SHARING = st.sampled_from(list(Sharing))


@given(
    capacity=st.integers(1, 6),
    configured=CONFIGURED,
    sharing=SHARING,
    quota=st.integers(0, 3),
    crowd=st.integers(0, 40),  # beyond a pool's front without backfill: capacity + 1 + SKIP_LOOKAHEAD
    backfill=st.booleans(),
    jobs=st.lists(st.tuples(TAGS, st.integers(0, 9), st.integers(1, 2)), max_size=12),
)
def test_with_free_capacity_every_groups_first_jobs_are_read_by_some_front(
    capacity: int,
    configured: set[str],
    sharing: Sharing,
    quota: int,
    crowd: int,
    backfill: bool,
    jobs: list[tuple[str | None, int, int]],
) -> None:
    """Whatever the teams and however long the crowd of another team's higher-priority jobs ahead,
    the first `free + 1` pending jobs of every group that may run in a pool with free instances (its
    head and every job that could start in this pass) are in the snapshot the pass decides over: a
    job whose team tag names no configured team included (it is in the unassigned group)."""
    snapshots: list[Snapshot] = []
    world = World(capacity={POOL: capacity})
    crowd_team = min(configured)
    for index in range(crowd):
        create(world, f"crowd-{index:03d}", crowd_team, priority=9)
    for index, (tag, priority, instances) in enumerate(jobs):
        create(world, f"job-{index:03d}", tag, priority=priority, instances=min(instances, capacity))
    teams = Teams(quotas={team: Quota(instances={POOL: quota}, sharing=sharing) for team in configured})
    world.config.config = replace(world.config.config, teams=teams, backfill=backfill)
    pending = sorted(
        (job for job in world.all_jobs() if job.state is JobState.PENDING),
        key=lambda job: order_key(job.priority, job.submitted_at, job.name),
    )
    real = passes.decide_pass

    def spy(snapshot: Snapshot, now: datetime, config: SchedulerConfig, measured: Ledger | None = None) -> Any:
        snapshots.append(snapshot)
        return real(snapshot, now, config, measured)

    passes.decide_pass = spy  # type: ignore[assignment]
    try:
        world.kick()
    finally:
        passes.decide_pass = real  # type: ignore[assignment]

    read = {job.name for job in snapshots[0].jobs}
    free = capacity
    for group in teams.names():
        if not (teams.quota(group, POOL, capacity) or teams.sharing(group).borrows):
            continue  # a team with no quota here that may not borrow can never run here
        first = [job.name for job in pending if teams.team_of(job.team) == group][: free + 1]
        assert set(first) <= read, f"group {group}: {sorted(set(first) - read)} never read"
