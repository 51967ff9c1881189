"""The per-pass ledger of instances per team and pool, beside the pool ledger (`capacity.Ledger`).

A team's *claim* on a pool is what counts against its quota in this pass:

    claim = held by its live jobs - on their way back (preempting, stopping) + kept in this pass
            (starts decided, and instances waited for by its heads)

A team *borrows* in a pool while its live jobs hold more than its quota there (instances on their
way back not counted: they are already being given back). Its *idle quota* is what its claim
leaves of its quota; a team that lends lets other teams run on it, a team that reserves keeps it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from smq_lambda.domain.model import Job
from smq_lambda.domain.states import RELEASING_STATES
from smq_lambda.domain.teams import UNASSIGNED, held_in_pools, lent_by
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot


def possessive(team: str) -> str:
    """`team`'s, in a sentence ("vision's"; the unassigned group is "unassigned jobs'")."""
    return "unassigned jobs'" if team == UNASSIGNED else f"{team}'s"


def named(team: str) -> str:
    return "unassigned jobs" if team == UNASSIGNED else team


class TeamLedger:
    def __init__(self, snapshot: Snapshot, config: SchedulerConfig) -> None:
        self._config = config
        self._teams = config.teams
        self._held = Counter(held_in_pools(snapshot.jobs, self._teams))
        self._releasing = Counter(
            held_in_pools((job for job in snapshot.jobs if job.state in RELEASING_STATES), self._teams)
        )
        self._kept: Counter[tuple[str, str]] = Counter()

    def team(self, job: Job) -> str:
        return self._teams.team_of(job.team)

    def quota(self, team: str, pool: str) -> int | None:
        return self._teams.quota(team, pool, self._config.capacity(pool))

    def claim(self, team: str, pool: str) -> int:
        return self._held[team, pool] - self._releasing[team, pool] + self._kept[team, pool]

    def beyond_quota(self, team: str, demand: Mapping[str, int]) -> dict[str, int]:
        """Per limited pool, the instances `demand` would put `team` beyond its quota."""
        beyond = {}
        for pool, count in demand.items():
            quota = self.quota(team, pool)
            if quota is not None and (over := self.claim(team, pool) + count - quota) > 0:
                beyond[pool] = over
        return beyond

    def borrowing(self, team: str, pool: str) -> int:
        """Instances `team`'s live jobs hold beyond its quota, not counting those already going back."""
        quota = self.quota(team, pool)
        if quota is None:
            return 0
        return max(self._held[team, pool] - self._releasing[team, pool] - quota, 0)

    def idle(self, team: str, pool: str) -> int:
        quota = self.quota(team, pool)
        return 0 if quota is None else max(quota - self.claim(team, pool), 0)

    def reserved(self, pool: str, *, besides: str) -> int:
        """Idle quota of `pool` that teams other than `besides` keep for themselves (they do not lend)."""
        return sum(
            self.idle(team, pool)
            for team in self._teams.names()
            if team != besides and not self._teams.sharing(team).lends
        )

    def lenders(self, pool: str, count: int) -> list[tuple[str, int]]:
        """Whose idle quota `count` more borrowed instances of `pool` run on: what `lent_by`
        attributes with them, less what it attributed to the borrowing already counted."""
        teams = self._teams.names()
        idle = {team: self.idle(team, pool) for team in teams}
        quotas = {team: self.quota(team, pool) or 0 for team in teams}
        borrowed = sum(max(self.claim(team, pool) - quotas[team], 0) for team in teams)
        before, after = lent_by(borrowed, idle, self._teams), lent_by(borrowed + count, idle, self._teams)
        return [(team, after[team] - before.get(team, 0)) for team in after if after[team] > before.get(team, 0)]

    def held_share(self, team: str) -> float:
        """Instances the team holds over all pools, per instance of its quota."""
        held = sum(count for (group, _), count in self._held.items() if group == team)
        return held / self._teams.weight(team, self._config.pools)

    def take(self, team: str, demand: Mapping[str, int]) -> None:
        self._kept.update({(team, pool): count for pool, count in demand.items()})

    def release(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            self._releasing.update({(self.team(job), pool): count for pool, count in job.demand.items()})
