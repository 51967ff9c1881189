"""Each team's share of each pool, as a pass leaves it (the pass summary, the Team* metrics) and as
GET /quotas shows it: pure functions over what the groups hold and wait for.

Per group (a configured team, or UNASSIGNED) and pool:

* `quota`: `Teams.quota(team, pool, capacity)`; None in a pool without a limit;
* `in_use`: instances the group's live jobs hold (a job's group is `Teams.team_of(job.team)`;
  a heterogeneous job counts in every pool it holds). Training jobs outside the queue are no
  group's: they show in the pool's `in_use` (GET /pools), not here;
* `borrowed`: `max(in_use - quota, 0)`;
* `lent`: the part of the group's idle quota (`quota - in_use`, when positive) that other groups'
  borrowing occupies, attributed by the one rule of `domain.config.teams.lent_by`.

A row is shown for every configured team with a quota in the pool or jobs in it (running or
pending), and for the unassigned group when it has a remainder of the pool or jobs in it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.config.teams import Teams, lent_by
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.pass_summary import TeamMeasure
from smq_lambda.scheduling.aging import waiting_since

GroupPool = tuple[str, str]
"""(group, pool)."""


@dataclass(frozen=True)
class Waiting:
    """A group's pending jobs in one pool: how many, and the longest wait among them."""

    jobs: int
    longest_s: float | None = None


def waiting_by_group(jobs: Iterable[Job], teams: Teams, now: datetime) -> dict[GroupPool, Waiting]:
    """The pending jobs among `jobs`, per group and the pool each is listed under (its first)."""
    waits: dict[GroupPool, list[float]] = {}
    for job in jobs:
        if job.state is JobState.PENDING:
            key = (teams.team_of(job.team), job.where.pool)
            waits.setdefault(key, []).append(max((now - waiting_since(job)).total_seconds(), 0.0))
    return {key: Waiting(len(seconds), max(seconds)) for key, seconds in waits.items()}


def team_measures(
    pools: Mapping[str, int | None],
    teams: Teams,
    held: Mapping[GroupPool, int],
    waiting: Mapping[GroupPool, Waiting] | None = None,
) -> tuple[TeamMeasure, ...]:
    """The rows of `pools` (pool → capacity, in the order to show), teams by name then UNASSIGNED,
    each group's pools in the order of `pools`; none when no quota is configured."""
    if not teams.enabled:
        return ()
    waiting = waiting or {}
    groups = teams.names()
    rows: dict[GroupPool, TeamMeasure] = {}
    for pool, capacity in pools.items():
        quotas = {group: teams.quota(group, pool, capacity) for group in groups}
        in_use = {group: held.get((group, pool), 0) for group in groups}
        borrowed = {group: _beyond(in_use[group], quotas[group]) for group in groups}
        idle = {group: _idle(in_use[group], quotas[group]) for group in groups}
        lent = lent_by(sum(borrowed.values()), idle, teams)
        for group in groups:
            waits = waiting.get((group, pool), Waiting(0))
            if not (quotas[group] or in_use[group] or waits.jobs):
                continue
            rows[(group, pool)] = TeamMeasure(
                team=group,
                pool=pool,
                quota=quotas[group],
                in_use=in_use[group],
                borrowed=borrowed[group],
                lent=lent.get(group, 0),
                pending=waits.jobs,
                longest_wait_s=waits.longest_s,
            )
    return tuple(rows[(group, pool)] for group in groups for pool in pools if (group, pool) in rows)


def _beyond(in_use: int, quota: int | None) -> int:
    return 0 if quota is None else max(in_use - quota, 0)


def _idle(in_use: int, quota: int | None) -> int:
    return 0 if quota is None else max(quota - in_use, 0)
