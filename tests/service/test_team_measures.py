"""Each team's share of each pool, as pure functions: quota, in use, borrowed, lent (who lends is
attributed by rule: the pool's borrowing over the lenders' idle quota, by largest remainder), the
unassigned group's remainder, and what a pass publishes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from smq_lambda.domain.config.teams import UNASSIGNED, Quota, Sharing, Teams
from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.pass_summary import TeamMeasure
from smq_lambda.scheduling.aging import waiting_since
from smq_lambda.scheduling.snapshot import SchedulerConfig, UnpooledPolicy
from smq_lambda.service.pass_measures import pass_summary
from smq_lambda.service.team_measures import Waiting, team_measures

NOW = datetime(2024, 1, 1, 12, tzinfo=UTC)
P = "ml.p5.48xlarge"
G = "ml.g5.xlarge"
U = UNASSIGNED
TEAMS = Teams(
    quotas={
        "a": Quota({P: 4}),
        "b": Quota({P: 2}, sharing=Sharing.LEND),
        "r": Quota({P: 2}, sharing=Sharing.RESERVE),
    }
)
"""A pool of 10: a 4 (lends and borrows), b 2 (lends), r 2 (reserves), the unassigned group the 2 left."""


def row(team: str, quota: int | None, in_use: int, borrowed: int = 0, lent: int = 0, pool: str = P) -> TeamMeasure:
    return TeamMeasure(team=team, pool=pool, quota=quota, in_use=in_use, borrowed=borrowed, lent=lent)


@pytest.mark.parametrize(
    ("held", "expected"),
    [
        pytest.param(
            {},
            [row("a", 4, 0), row("b", 2, 0), row("r", 2, 0), row(U, 2, 0)],
            id="idle: every quota and the unassigned remainder",
        ),
        pytest.param(
            {"a": 4, "b": 1, U: 2},
            [row("a", 4, 4), row("b", 2, 1), row("r", 2, 0), row(U, 2, 2)],
            id="within quotas: nothing borrowed, nothing lent",
        ),
        pytest.param(
            {"a": 7},
            [row("a", 4, 7, borrowed=3), row("b", 2, 0, lent=2), row("r", 2, 0), row(U, 2, 0, lent=1)],
            id="borrowing: split over the lenders' idle quota, the tie to the first by name",
        ),
        pytest.param(
            {"a": 5, "b": 1},
            [row("a", 4, 5, borrowed=1), row("b", 2, 1), row("r", 2, 0), row(U, 2, 0, lent=1)],
            id="the larger idle quota lends first",
        ),
        pytest.param(
            {"a": 10},
            [row("a", 4, 10, borrowed=6), row("b", 2, 0, lent=2), row("r", 2, 0), row(U, 2, 0, lent=2)],
            id="no one lends more than it has idle; a reserve lends nothing",
        ),
        pytest.param(
            {U: 5},
            [row("a", 4, 0, lent=2), row("b", 2, 0, lent=1), row("r", 2, 0), row(U, 2, 5, borrowed=3)],
            id="the unassigned group borrows beyond its remainder",
        ),
        pytest.param(
            {"a": 6, U: 3},
            [row("a", 4, 6, borrowed=2), row("b", 2, 0, lent=2), row("r", 2, 0), row(U, 2, 3, borrowed=1)],
            id="two borrowers, one lender",
        ),
    ],
)
def test_quota_in_use_borrowed_and_lent(held: dict[str, int], expected: list[TeamMeasure]) -> None:
    measures = team_measures({P: 10}, TEAMS, {(team, P): count for team, count in held.items()})

    assert list(measures) == expected
    assert sum(m.lent for m in measures) <= sum(m.borrowed for m in measures)


@pytest.mark.parametrize(
    ("capacity", "held", "expected"),
    [
        pytest.param(8, {}, [row("a", 4, 0), row("b", 2, 0), row("r", 2, 0)], id="quotas fill the pool: no remainder"),
        pytest.param(
            8,
            {U: 1},
            [row("a", 4, 0, lent=1), row("b", 2, 0), row("r", 2, 0), row(U, 0, 1, borrowed=1)],
            id="jobs of no team show the unassigned group",
        ),
        pytest.param(6, {}, [row("a", 4, 0), row("b", 2, 0), row("r", 2, 0)], id="quotas beyond capacity"),
    ],
)
def test_the_unassigned_remainder(capacity: int, held: dict[str, int], expected: list[TeamMeasure]) -> None:
    measures = team_measures({P: capacity}, TEAMS, {(team, P): count for team, count in held.items()})

    assert list(measures) == expected


def test_rows_are_by_team_then_pool_and_only_where_a_team_has_a_quota_or_jobs() -> None:
    teams = Teams(quotas={"a": Quota({P: 2}), "b": Quota({G: 3})})

    measures = team_measures(
        {P: 2, G: 4, "ml.c5.xlarge": None}, teams, {("b", P): 1, ("a", "ml.c5.xlarge"): 3}, {(U, G): Waiting(2, 60.0)}
    )

    assert [(m.team, m.pool, m.quota) for m in measures] == [
        ("a", P, 2),
        ("a", "ml.c5.xlarge", None),
        ("b", P, 0),
        ("b", G, 3),
        (U, G, 1),
    ]
    assert measures[1] == row("a", None, 3, pool="ml.c5.xlarge"), "no limit: nothing borrowed"
    assert measures[0] == row("a", 2, 0, lent=1), "b borrows on a's idle quota"
    assert measures[2] == row("b", 0, 1, borrowed=1)
    assert (measures[4].pending, measures[4].longest_wait_s) == (2, 60.0)


def test_without_quotas_there_are_no_team_measures() -> None:
    assert team_measures({P: 10}, Teams(), {(U, P): 3}) == ()


def job(name: str, state: JobState, team: str | None, demand: dict[str, int], waited: timedelta = timedelta()) -> Job:
    return Job(
        name=name,
        job_id=name,
        state=state,
        priority=0,
        submitted_at=NOW - waited,
        demand=demand,
        owner="arn:aws:iam::000000000000:user/alice",
        team=team,
    )


def test_a_pass_publishes_team_measures_of_its_live_and_pending_jobs() -> None:
    config = SchedulerConfig(pools={P: 10, G: 2}, teams=TEAMS, unpooled=UnpooledPolicy.UNLIMITED)
    live = [
        job("a1", JobState.RUNNING, "a", {P: 6}),
        job("hetero", JobState.STARTING, "b", {G: 1, P: 1}),
        job("untagged", JobState.RUNNING, None, {P: 1}),
        job("unknown-team", JobState.STOPPING, "zeta", {P: 1}),
        job("done", JobState.COMPLETED, "a", {P: 4}),
    ]
    pending = [
        job("a-waits", JobState.PENDING, "a", {P: 2}, waited=timedelta(minutes=5)),
        job("a-waits-longer", JobState.PENDING, "a", {P: 1}, waited=timedelta(hours=1)),
        job("r-waits", JobState.PENDING, "r", {G: 1}, waited=timedelta(seconds=30)),
    ]

    report = pass_summary(live, {P: 1}, config, NOW, {}, pending=pending)

    assert report.teams == (
        TeamMeasure("a", P, 4, 6, borrowed=2, lent=0, pending=2, longest_wait_s=3600.0),
        TeamMeasure("b", P, 2, 1, borrowed=0, lent=1, pending=0),
        TeamMeasure("b", G, 0, 1, borrowed=1, lent=0, pending=0),
        TeamMeasure("r", P, 2, 0, borrowed=0, lent=0),
        TeamMeasure("r", G, 0, 0, borrowed=0, lent=0, pending=1, longest_wait_s=30.0),
        TeamMeasure(U, P, 2, 2, borrowed=0, lent=0),
        TeamMeasure(U, G, 2, 0, borrowed=0, lent=1),
    ), "outside jobs are no team's; an unknown team is unassigned; a finished job holds nothing"
    assert [pool.in_use for pool in report.pools] == [10, 1]


def test_a_pass_without_quotas_publishes_no_teams() -> None:
    config = SchedulerConfig(pools={P: 10})

    report = pass_summary([job("a1", JobState.RUNNING, "a", {P: 6})], {}, config, NOW, {})

    assert report.teams == ()


def test_a_requeued_job_waits_from_the_end_of_its_last_attempt() -> None:
    ended = NOW - timedelta(minutes=3)
    attempt = Attempt(number=1, training_job_name="j-1", started_at=NOW - timedelta(hours=2), ended_at=ended)
    requeued = replace(job("j", JobState.PENDING, "a", {P: 1}, waited=timedelta(hours=5)), attempts=(attempt,))

    assert waiting_since(requeued) == ended
    assert waiting_since(job("k", JobState.PENDING, "a", {P: 1}, waited=timedelta(hours=5))) == NOW - timedelta(hours=5)
