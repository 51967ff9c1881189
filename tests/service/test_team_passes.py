"""Passes with team quotas: they read each team's front beside each pool's, so a team with free
quota is never hidden behind another team's backlog, and they carry the teams' decayed usage from
pass to pass, race-safe."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from smq_lambda.domain.config.teams import UNASSIGNED, Quota, Teams, decay_usage
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import VersionConflict
from smq_lambda.pass_summary import TeamUsageRecord
from smq_lambda.scheduling import queue_front
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from tests.service.harness import POOL, World, queued_job
from tests.support.fakes import InMemoryJobStore

CAPACITY = 4
TEAMS = Teams(quotas={"a": Quota(instances={POOL: 2}), "b": Quota(instances={POOL: 2})}, usage_half_life_s=3600)


def create(world: World, name: str, team: str | None, priority: int = 0, instances: int = 1) -> Job:
    world.clock.advance(seconds=1)
    job = queued_job(name, priority=priority, submitted_at=world.clock(), instances=instances)
    return world.store.create(replace(job, team=team))


def with_teams(world: World, teams: Teams = TEAMS) -> None:
    world.config.config = replace(world.config.config, teams=teams)


def team_a_at_quota_with_a_backlog(depth: int) -> World:
    """Team a runs its quota (2 of 4) and has `depth` jobs waiting at a higher priority than team
    b's one job, submitted last."""
    world = World(capacity={POOL: CAPACITY})
    for index in range(2):
        create(world, f"a-run-{index}", "a", priority=5)
    world.kick()
    for index in range(2):
        world.progress(f"a-run-{index}", "InProgress")
    for index in range(depth):
        create(world, f"a-wait-{index:04d}", "a", priority=5)
    create(world, "b-job", "b", priority=0)
    return world


def test_a_teams_job_behind_a_thousand_of_another_teams_is_decided_over(decided: list[Snapshot]) -> None:
    world = team_a_at_quota_with_a_backlog(1000)
    with_teams(world)
    store: InMemoryJobStore = world.store  # type: ignore[assignment]
    store.front_reads = 0
    decided.clear()

    world.kick()

    seen = {job.name for job in decided[0].jobs}
    assert "b-job" in seen, "team b has free quota: its first job is in the pass"
    assert world.job("b-job").state is JobState.STARTING, "within its quota"
    lookahead = queue_front.SKIP_LOOKAHEAD
    assert store.front_reads <= 3 * (2 + 1 + lookahead) + 1, "bounded by the fronts, not by the backlog"


def test_without_quotas_the_pass_reads_only_the_pools_front(decided: list[Snapshot]) -> None:
    world = team_a_at_quota_with_a_backlog(100)
    store: InMemoryJobStore = world.store  # type: ignore[assignment]
    store.front_reads = 0
    decided.clear()

    world.kick()

    assert "b-job" not in {job.name for job in decided[0].jobs}
    assert store.front_reads == 2 + 1 + queue_front.SKIP_LOOKAHEAD


def test_a_job_in_two_fronts_is_decided_over_once(decided: list[Snapshot]) -> None:
    world = World(capacity={POOL: CAPACITY})
    with_teams(world)
    for index in range(3):
        create(world, f"b-{index}", "b")
    create(world, "untagged", None)

    world.kick()

    names = [job.name for job in decided[0].jobs]
    assert sorted(names) == ["b-0", "b-1", "b-2", "untagged"]


def test_untagged_jobs_and_unconfigured_teams_are_read_through_the_untagged_and_pool_fronts(
    decided: list[Snapshot],
) -> None:
    world = World(capacity={POOL: CAPACITY})
    with_teams(world)
    create(world, "untagged", None)
    create(world, "stranger", "not-configured")

    world.kick()

    assert {job.name for job in decided[0].jobs} >= {"untagged", "stranger"}


# ------------------------------------------------------------------------- front sizes


def test_team_fronts_cover_each_configured_team_with_quota_and_the_untagged_jobs() -> None:
    from smq_lambda.scheduling.capacity import Ledger

    config = SchedulerConfig(pools={POOL: 8, "ml.g5.xlarge": 2}, teams=TEAMS)
    ledger = Ledger(config, used={POOL: 6, "ml.g5.xlarge": 2}, releasing={})
    ahead = 1 + queue_front.SKIP_LOOKAHEAD

    sizes = queue_front.team_front_sizes([POOL, "ml.g5.xlarge", "ml.c5.xlarge"], ledger, TEAMS, backfill=False)

    assert sizes == {
        (POOL, "a"): 2 + ahead,
        (POOL, "b"): 2 + ahead,
        (POOL, ""): 4 + ahead,  # the unassigned group's quota: what the teams leave of the pool
        ("ml.g5.xlarge", ""): 2 + ahead,  # no team has quota there: the unassigned group has it all
        ("ml.c5.xlarge", ""): 0 + ahead,  # a pool of capacity 0 (unpooled types are rejected)
    }
    assert queue_front.team_front_sizes([POOL], ledger, Teams(), backfill=False) == {}


def test_a_team_that_may_borrow_gets_a_front_while_the_pool_has_free_instances() -> None:
    from smq_lambda.scheduling.capacity import Ledger

    teams = Teams(quotas={"a": Quota(instances={POOL: 4}), "borrower": Quota(instances={})})
    config = SchedulerConfig(pools={POOL: 4}, teams=teams)
    free = Ledger(config, used={POOL: 1}, releasing={})
    full = Ledger(config, used={POOL: 4}, releasing={})

    assert (POOL, "borrower") in queue_front.team_front_sizes([POOL], free, teams, backfill=True)
    assert (POOL, "borrower") not in queue_front.team_front_sizes([POOL], full, teams, backfill=True)
    assert queue_front.team_front_sizes([POOL], free, teams, backfill=True)[(POOL, "a")] == (
        4 + 1 + queue_front.SKIP_LOOKAHEAD + queue_front.BACKFILL_LOOKAHEAD
    )


# ------------------------------------------------------------------------ usage history


def test_without_quotas_no_usage_is_read_or_kept(decided: list[Snapshot]) -> None:
    world = World(capacity={POOL: CAPACITY})
    world.submit("plain", 1)

    assert world.team_usage.record is None and world.team_usage.saves == 0
    assert all(snapshot.team_usage == {} for snapshot in decided)


def test_the_first_pass_starts_the_record_and_later_passes_add_decayed_usage(decided: list[Snapshot]) -> None:
    world = team_a_at_quota_with_a_backlog(0)
    create(world, "untagged-run", None)
    with_teams(world)
    world.kick()  # b-job and untagged-run start; the record starts now
    started_at = world.clock()
    assert world.team_usage.record == TeamUsageRecord(usage={}, at=started_at)
    assert decided[-1].team_usage == {}

    world.clock.advance(seconds=600)
    world.kick()

    expected = decay_usage({}, 600, {"a": 2, "b": 1, UNASSIGNED: 1}, 3600)
    assert decided[-1].team_usage == pytest.approx(expected)
    assert world.team_usage.record is not None
    assert world.team_usage.record.at == world.clock()
    assert world.team_usage.record.usage == pytest.approx(expected)

    world.clock.advance(seconds=3600)
    world.kick()

    later = decay_usage(expected, 3600, {"a": 2, "b": 1, UNASSIGNED: 1}, 3600)
    assert world.team_usage.record.usage == pytest.approx(later)


def test_a_pass_that_loses_the_race_for_the_record_leaves_the_winners(decided: list[Snapshot]) -> None:
    world = team_a_at_quota_with_a_backlog(0)
    with_teams(world)
    world.kick()
    winner = TeamUsageRecord(usage={"b": 99.0}, at=world.clock() + timedelta(seconds=30))
    real_load = world.team_usage.load

    def load_then_lose() -> TeamUsageRecord | None:
        loaded = real_load()
        world.team_usage.record = winner  # another pass saves between this pass's load and save
        return loaded

    world.team_usage.load = load_then_lose  # type: ignore[method-assign]
    world.clock.advance(seconds=60)

    summary = world.kick()

    assert summary["job_errors"] == []
    assert world.team_usage.record == winner


def test_a_throttled_history_never_fails_a_pass(decided: list[Snapshot]) -> None:
    world = team_a_at_quota_with_a_backlog(0)
    with_teams(world)
    world.team_usage.unavailable = True
    decided.clear()

    summary = world.kick()

    assert (summary["passes"], summary["job_errors"]) == (1, [])
    assert decided[-1].team_usage == {}
    assert world.team_usage.record is None


def test_a_failed_save_is_counted_by_the_next_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    world = team_a_at_quota_with_a_backlog(0)
    with_teams(world)
    world.kick()
    first = world.team_usage.record
    assert first is not None
    real_save = world.team_usage.save
    monkeypatch.setattr(world.team_usage, "save", _raise_conflict)
    world.clock.advance(seconds=300)
    world.kick()
    assert world.team_usage.record == first, "nothing was saved"

    monkeypatch.setattr(world.team_usage, "save", real_save)
    world.clock.advance(seconds=300)
    world.kick()

    record = world.team_usage.record
    assert record is not None and record.at == world.clock()
    held = {"a": 2, "b": 1}
    assert record.usage == pytest.approx(decay_usage({}, 600, held, 3600)), "the whole interval, counted once"


def _raise_conflict(record: TeamUsageRecord, *, previous: TeamUsageRecord | None) -> None:
    raise VersionConflict("#team-usage")
