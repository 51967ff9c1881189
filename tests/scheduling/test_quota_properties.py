"""Properties of passes with team quotas over random queues (hypothesis).

* no over-commit: starts fit the free instances;
* teams stay within quota + borrow limit, and teams that do not borrow within their quota;
* the idle quota of reserving teams (counting their jobs being stopped as still held) is never
  started on by others;
* a preempted job is either of the same team and of lower priority (and not protected), or of a
  team running beyond its quota (a reclaim);
* a team with pending work and unused quota waits only for stops in flight: in every pass where
  its first pending job fits its idle quota, a job of the team starts or stops are in flight.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from smq_lambda.domain.config.teams import QUOTA_PREEMPTION_DEFAULTS, PreemptionRules, Quota, Sharing, Teams
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import LIVE_STATES, RELEASING_STATES, JobState
from smq_lambda.scheduling.actions import PreemptJob, StartJob
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.preemption import protection
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from .builders import NOW, P5, T0, JobBuilder, apply, event
from .test_decide_cases import summary

TEAMS = ["a", "b", "c"]


@st.composite
def quota_configs(draw: st.DrawFn) -> SchedulerConfig:
    capacity = draw(st.integers(1, 6))
    quotas, left = {}, capacity
    for team in TEAMS:
        share = draw(st.integers(0, left))
        left -= share
        limit = draw(st.none() | st.integers(0, 3))
        sharing = draw(st.sampled_from(list(Sharing)))
        quotas[team] = Quota({P5: share}, sharing, limit if sharing is Sharing.LEND_AND_BORROW else None)
    rules = draw(st.sampled_from([PreemptionRules(), QUOTA_PREEMPTION_DEFAULTS]))
    backfill = draw(st.booleans())
    return SchedulerConfig(pools={P5: capacity}, teams=Teams(quotas=quotas), preemption=rules, backfill=backfill)


@st.composite
def quota_snapshots(draw: st.DrawFn, config: SchedulerConfig) -> Snapshot:
    """Up to 10 jobs of teams a, b, c or none; live jobs never over-commit the pool."""
    jobs, held = [], 0
    for number in range(draw(st.integers(0, 10))):
        builder = JobBuilder(f"job{number}", T0 + timedelta(minutes=draw(st.integers(0, 20))))
        builder.priority(draw(st.integers(0, 3))).team(draw(st.sampled_from([*TEAMS, None, "x"])))
        need = draw(st.integers(1, 3))
        builder.needs(need, P5).past_attempts(draw(st.integers(0, 3)))
        state = draw(st.sampled_from([JobState.PENDING] * 3 + [JobState.RUNNING] * 3 + [JobState.PREEMPTING]))
        if state is not JobState.PENDING:
            if held + need > config.pools[P5]:
                continue
            held += need
            builder.live(state, NOW - timedelta(minutes=draw(st.integers(0, 60))))
        jobs.append(builder.build())
    usage = draw(st.dictionaries(st.sampled_from(TEAMS), st.floats(0, 1e6)))
    return Snapshot(jobs=tuple(jobs), team_usage=usage)


def team_of(config: SchedulerConfig, job) -> str:
    return config.teams.team_of(job.team)


def claims(config: SchedulerConfig, snapshot: Snapshot) -> Counter[str]:
    """Instances per team held by live jobs not on their way back."""
    held: Counter[str] = Counter()
    for job in snapshot.jobs:
        if job.state in LIVE_STATES and job.state not in RELEASING_STATES:
            held[team_of(config, job)] += job.demand[P5]
    return held


def holdings(config: SchedulerConfig, snapshot: Snapshot) -> Counter[str]:
    """Instances per team held by live jobs, those on their way back included (not yet free)."""
    held: Counter[str] = Counter()
    for job in snapshot.jobs:
        if job.state in LIVE_STATES:
            held[team_of(config, job)] += job.demand[P5]
    return held


@st.composite
def cases(draw: st.DrawFn) -> tuple[SchedulerConfig, Snapshot]:
    config = draw(quota_configs())
    return config, draw(quota_snapshots(config))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_a_pass_with_quotas_keeps_the_rules(case: tuple[SchedulerConfig, Snapshot]) -> None:
    config, snapshot = case
    jobs = {job.name: job for job in snapshot.jobs}
    actions = decide(snapshot, NOW, config)
    after = apply(snapshot, actions, NOW)
    capacity = config.pools[P5]
    used_after = sum(job.demand[P5] for job in after.jobs if job.state in LIVE_STATES)
    started = [action for action in actions if isinstance(action, StartJob)]

    if started:
        assert used_after <= capacity
    before, now_held = claims(config, snapshot), claims(config, after)
    for action in started:
        team = team_of(config, jobs[action.job_name])
        quota = config.teams.quota(team, P5, capacity)
        sharing, limit = config.teams.sharing(team), config.teams.borrow_limit(team)
        allowed = quota if not sharing.borrows else quota + (limit if limit is not None else capacity)
        assert now_held[team] <= max(allowed, before[team] + 0), (team, now_held, allowed)
    if started:
        free_after = capacity - used_after
        holding_before, holding_after = holdings(config, snapshot), holdings(config, after)
        reserved = sum(
            max((config.teams.quota(team, P5, capacity) or 0) - holding_after[team], 0)
            for team in config.teams.names()
            if not config.teams.sharing(team).lends
        )
        reserved_before = sum(
            max((config.teams.quota(team, P5, capacity) or 0) - holding_before[team], 0)
            for team in config.teams.names()
            if not config.teams.sharing(team).lends
        )
        if capacity - sum(j.demand[P5] for j in snapshot.jobs if j.state in LIVE_STATES) >= reserved_before:
            assert free_after >= reserved or any(
                team_of(config, jobs[a.job_name]) in config.teams.quotas
                and not config.teams.sharing(team_of(config, jobs[a.job_name])).lends
                for a in started
            )
    for action in actions:
        if isinstance(action, PreemptJob):
            target, head = jobs[action.job_name], jobs[action.for_job]
            target_team, head_team = team_of(config, target), team_of(config, head)
            if target_team == head_team:
                assert target.priority < head.priority
                assert protection(target, NOW, config.preemption) is None
            else:
                assert before[target_team] > (config.teams.quota(target_team, P5, capacity) or 0)


def land_stops(snapshot: Snapshot) -> Snapshot:
    """Every stop in flight lands: preempting jobs wait again."""
    for job in snapshot.jobs:
        if job.state in RELEASING_STATES:
            snapshot = event(snapshot, job.name, NOW, to=JobState.PENDING)
    return snapshot


def promised_teams(config: SchedulerConfig, snapshot: Snapshot) -> set[str]:
    """Teams whose first pending job (in queue order, not in backoff) fits their idle quota."""
    capacity = config.pools[P5]
    held = claims(config, snapshot)
    firsts: dict = {}
    for job in sorted((job for job in snapshot.jobs if job.state is JobState.PENDING), key=lambda job: job.order):
        firsts.setdefault(team_of(config, job), job)
    return {
        team
        for team, job in firsts.items()
        if job.demand[P5] <= capacity and held[team] + job.demand[P5] <= (config.teams.quota(team, P5, capacity) or 0)
    }


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_a_team_with_idle_quota_waits_only_for_stops_in_flight(case: tuple[SchedulerConfig, Snapshot]) -> None:
    config, snapshot = case
    for _ in range(4):
        promised = promised_teams(config, snapshot)
        before = {job.name for job in snapshot.jobs if job.state is JobState.STARTING}
        snapshot = apply(snapshot, decide(snapshot, NOW, config), NOW)
        started = {
            team_of(config, job) for job in snapshot.jobs if job.state is JobState.STARTING and job.name not in before
        }
        if promised - started:
            assert any(job.state in RELEASING_STATES for job in snapshot.jobs), promised - started
        snapshot = land_stops(snapshot)


def borrowing_nothing_as_lending(config: SchedulerConfig) -> SchedulerConfig:
    """`config` with every lending team made `lend_and_borrow` with a borrow limit of 0."""
    quotas = {
        team: replace(quota, sharing=Sharing.LEND_AND_BORROW, borrow_limit=0)
        if quota.sharing is Sharing.LEND
        else quota
        for team, quota in config.teams.quotas.items()
    }
    return replace(config, teams=replace(config.teams, quotas=quotas))


def running(name: str, team: str, priority: int) -> Job:
    return JobBuilder(name, T0).team(team).priority(priority).needs(1, P5).live(JobState.RUNNING, T0).build()


AT_QUOTA = (
    SchedulerConfig(
        pools={P5: 4}, teams=Teams(quotas={"a": Quota({P5: 2}, Sharing.LEND), "b": Quota({P5: 2}, Sharing.LEND)})
    ),
    Snapshot(jobs=(running("a1", "a", 1), running("a2", "a", 1), JobBuilder("a3", T0).team("a").priority(9).build())),
)
"""Issue 19's case: a at its quota, a priority-9 job of a pending, two instances free."""
STOPPING_LENDER = (
    SchedulerConfig(pools={P5: 2}, teams=Teams(quotas={"b": Quota({P5: 1}, Sharing.LEND)})),
    Snapshot(
        jobs=(
            JobBuilder("b1", T0).team("b").needs(1, P5).live(JobState.PREEMPTING, T0).build(),
            JobBuilder("b2", T0).team("b").build(),
        )
    ),
)
"""A stop of b in flight counts against b's quota whether b lends only or may borrow nothing."""


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
@example(case=AT_QUOTA)
@example(case=STOPPING_LENDER)
def test_a_borrow_limit_of_0_schedules_as_lend(case: tuple[SchedulerConfig, Snapshot]) -> None:
    """A team that may borrow nothing is a team that lends: the same starts, stops and waits
    (0 is a limit, not "no limit")."""
    config, snapshot = case
    lending = decide(snapshot, NOW, config)
    borrowing_nothing = decide(snapshot, NOW, borrowing_nothing_as_lending(config))

    assert [summary(action) for action in borrowing_nothing] == [summary(action) for action in lending]


def test_the_generators_reach_reclaims_and_borrowing() -> None:
    """The strategies above are not vacuous: a fixed example of each rule they must reach."""
    config = SchedulerConfig(pools={P5: 2}, teams=Teams(quotas={"a": Quota({P5: 1}), "b": Quota({P5: 1})}))
    borrower = JobBuilder("a2", T0).team("a").needs(1, P5).live(JobState.RUNNING, NOW - timedelta(hours=1)).build()
    owner = JobBuilder("a1", T0).team("a").needs(1, P5).live(JobState.RUNNING, NOW - timedelta(hours=2)).build()
    lender = JobBuilder("b1", T0 + timedelta(minutes=1)).team("b").needs(1, P5).build()

    actions = decide(Snapshot(jobs=(owner, borrower, lender)), NOW, config)

    assert [type(action).__name__ for action in actions] == ["PreemptJob", "ExplainWait"]
    assert replace(actions[0], reason="") == PreemptJob("a2", 1, "b1", "")
