"""The per-team figures on a trace small enough to work out by hand (start-up takes no time, a stop
takes 60 s), with quotas and without them (measured against the same quotas)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from smq_lambda.domain.config.teams import UNASSIGNED, Quota, Sharing, Teams
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.engine import Result, Timing, simulate
from smq_lambda.simulation.team_metrics import TeamMeters

INSTANT = Timing(start_min_s=0, start_max_s=0)
TEAMS = Teams(quotas={"a": Quota({"p": 2}), "b": Quota({"p": 2})})
# a1 takes the whole pool (4: 2 of its quota, 2 borrowed) from 0 to 1000 s of training; b1 (2, 200 s)
# comes at 100 s.
#
# With quotas: b1 reclaims its quota at 100 s; a1 (which never saves) stops by 160, and waits as a
# borrower while b1 runs 160-360; a1 then borrows again and runs 360-1360.
# a holds 4 over [0, 160) and [360, 1360): 4640 instance-s, 2320 of them beyond its quota, all on
# b's idle quota. b holds 2 over [160, 360); it waited 60 s, for the stop its reclaim sent.
#
# Without quotas: b1 waits behind a1 until 1000 and runs 1000-1200; all that time b lacked its quota.
TRACE = [TraceJob("a1", 0, 0, "p", 4, 1000, team="a"), TraceJob("b1", 100, 0, "p", 2, 200, team="b")]


@pytest.fixture(scope="module")
def runs() -> dict[str, Result]:
    return {
        "quotas": simulate(TRACE, SchedulerConfig(pools={"p": 4}, teams=TEAMS), timing=INSTANT),
        "none": simulate(TRACE, SchedulerConfig(pools={"p": 4}), timing=INSTANT, teams=TEAMS),
    }


@pytest.mark.parametrize(
    ("run", "team", "path", "expected"),
    [
        ("quotas", "a", ("pools", "p", "share_of_capacity"), 4640 / (4 * 1360)),
        ("quotas", "a", ("pools", "p", "share_of_quota"), 4640 / (2 * 1360)),
        ("quotas", "a", ("pools", "p", "borrowed_instance_s"), 2320.0),
        ("quotas", "a", ("pools", "p", "lent_instance_s"), 0.0),
        ("quotas", "a", ("pools", "p", "pending_s"), 200.0),
        ("quotas", "a", ("pools", "p", "quota_kept"), 1.0),  # waiting beyond its quota is no lacks
        ("quotas", "a", ("wait_s", "max"), 0.0),
        ("quotas", "a", ("reclaims",), 0),
        ("quotas", "b", ("pools", "p", "share_of_capacity"), 400 / (4 * 1360)),
        ("quotas", "b", ("pools", "p", "share_of_quota"), 400 / (2 * 1360)),
        ("quotas", "b", ("pools", "p", "borrowed_instance_s"), 0.0),
        ("quotas", "b", ("pools", "p", "lent_instance_s"), 2320.0),
        ("quotas", "b", ("pools", "p", "pending_s"), 60.0),
        ("quotas", "b", ("pools", "p", "quota_kept"), 1.0),  # the reclaim's stop was in flight
        ("quotas", "b", ("wait_s", "p50"), 60.0),
        ("quotas", "b", ("reclaims",), 1),
        ("quotas", "b", ("reclaim_latency_s",), {"p50": 60.0, "max": 60.0}),
        ("quotas", "b", ("unresolved_reclaims",), 0),
        ("none", "a", ("pools", "p", "borrowed_instance_s"), 2000.0),
        ("none", "a", ("pools", "p", "quota_kept"), 1.0),
        ("none", "b", ("pools", "p", "share_of_capacity"), 400 / (4 * 1200)),
        ("none", "b", ("pools", "p", "lent_instance_s"), 2000.0),
        ("none", "b", ("pools", "p", "pending_s"), 900.0),
        ("none", "b", ("pools", "p", "quota_kept"), 0.0),
        ("none", "b", ("wait_s", "p50"), 900.0),
        ("none", "b", ("reclaims",), 0),
    ],
)  # fmt: skip
def test_the_figures_of_each_team(
    runs: dict[str, Result], run: str, team: str, path: tuple[str, ...], expected: Any
) -> None:
    value: Any = runs[run].metrics["teams"][team]
    for key in path:
        value = value[key]
    assert value == (pytest.approx(expected, abs=1e-6) if isinstance(expected, float) else expected)


def test_the_runs_went_as_worked_out(runs: dict[str, Result]) -> None:
    assert [(s.job, s.start_s, s.stop_s, s.end_s) for s in runs["quotas"].segments] == [
        ("a1", 0.0, 100.0, 160.0),
        ("b1", 160.0, None, 360.0),
        ("a1", 360.0, None, 1360.0),
    ]
    assert [(s.job, s.start_s, s.end_s) for s in runs["none"].segments] == [("a1", 0.0, 1000.0), ("b1", 1000.0, 1200.0)]


def test_no_quotas_no_team_figures() -> None:
    result = simulate(TRACE, SchedulerConfig(pools={"p": 4}), timing=INSTANT)

    assert "teams" not in result.metrics


def test_the_unassigned_group_is_reported_only_with_jobs(runs: dict[str, Result]) -> None:
    assert set(runs["quotas"].metrics["teams"]) == {"a", "b"}

    result = simulate([*TRACE, TraceJob("u", 0, 0, "p", 1, 10)], SchedulerConfig(pools={"p": 5}, teams=TEAMS))

    assert result.metrics["teams"][UNASSIGNED]["pools"]["p"]["quota"] == 1


def running(name: str, team: str | None, instances: int) -> Job:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return Job(name, name, JobState.RUNNING, 0, at, {"p": instances}, "owner", team=team)


def test_borrowed_instances_are_lent_in_proportion_to_the_lenders_idle_quota() -> None:
    """a borrows 3 in a pool of 8. c has the most idle quota (3) but reserves it; b and the
    unassigned group have 2 idle each: 1.5 each, the odd instance to b, first in name order."""
    teams = Teams(
        quotas={"a": Quota({"p": 1}), "b": Quota({"p": 2}, Sharing.LEND), "c": Quota({"p": 3}, Sharing.RESERVE)}
    )
    meters = TeamMeters(teams, {"p": 8})

    meters.observe([running("a1", "a", 4)], 0.0, 10.0)

    lent = {group: meters.meters[group, "p"].lent_s for group in teams.names()}
    assert lent == {"a": 0.0, "b": 20.0, "c": 0.0, UNASSIGNED: 10.0}
    assert meters.meters["a", "p"].borrowed_s == 30.0
