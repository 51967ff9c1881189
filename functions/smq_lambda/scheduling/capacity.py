"""The per-pass ledger of instances, per pool and per team: held, on their way back, free, kept,
reserved, borrowed and lent. Measured once from the snapshot at the start of a pass.

A pass updates the ledger as it decides (a start or a wait takes instances, a preemption marks them
as releasing), so later decisions in the same pass see earlier ones. The snapshot itself is never
touched.

Per pool:

    used      = demand of live jobs (starting, running, preempting, stopping) + external usage
                + warm pools (instances kept after an attempt ended, held until reused or ended)
                + instances taken in this pass (starts, and instances kept for waiting heads)
    releasing = demand of jobs whose stop was sent (preempting, stopping) and of warm pools the
                queue ended, a subset of used
    free      = capacity - used; may be negative when a pool shrank or outside jobs grew, and a
                pool with no capacity limit (unpooled types under `unlimited`) is never short.

Per team (a group of `domain.config.teams`: without quotas, every job is in the unassigned group, whose
quota is the whole pool), a team's *claim* on a pool is what counts against its quota:

    claim = held by its live jobs - on their way back + kept in this pass

except that a team that may not borrow (`lend`, `reserve`, a borrow limit of 0) counts its jobs on
their way back until their instances are given back: it never holds more than its quota, stops in
flight included.

A team *borrows* in a pool while its live jobs hold more than its quota there (instances on their
way back not counted: they are already being given back). Its *idle quota* is what its claim
leaves of its quota; a team that lends lets other teams run on it, a team that reserves keeps it.
The instances a team may count on in a pool are the free ones less the idle quota the other teams
reserve (`available`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from smq_lambda.domain.config.teams import held_in_pools, lent_by
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import LIVE_STATES, RELEASING_STATES
from smq_lambda.domain.warm.warm_pools import WarmPool
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot, held_warm_pools


class Ledger:
    """Instances per pool and per (team, pool) for one pass."""

    def __init__(
        self,
        config: SchedulerConfig,
        used: Mapping[str, int],
        releasing: Mapping[str, int],
        held: Mapping[tuple[str, str], int] | None = None,
        held_releasing: Mapping[tuple[str, str], int] | None = None,
    ) -> None:
        self._config = config
        self._teams = config.teams
        self._used = Counter(used)
        self._releasing = Counter(releasing)
        self._held = Counter(held or {})
        self._held_releasing = Counter(held_releasing or {})
        self._kept: Counter[tuple[str, str]] = Counter()

    @classmethod
    def measure(cls, snapshot: Snapshot, config: SchedulerConfig) -> Ledger:
        used: Counter[str] = Counter(snapshot.external_usage)
        releasing: Counter[str] = Counter()
        for job in snapshot.jobs:
            if job.state in LIVE_STATES:
                used.update(job.held)
            if job.state in RELEASING_STATES:
                releasing.update(job.held)
        for warm in held_warm_pools(snapshot):
            used.update(warm.demand)
            if warm.released:
                releasing.update(warm.demand)
        held = held_in_pools(snapshot.jobs, config.teams)
        held_releasing = held_in_pools((job for job in snapshot.jobs if job.state in RELEASING_STATES), config.teams)
        return cls(config, used, releasing, held, held_releasing)

    # Pools

    def capacity(self, pool: str) -> int | None:
        return self._config.capacity(pool)

    def used(self, pool: str) -> int:
        """Instances held: live queue jobs, training jobs outside the queue and warm pools still held
        (GET /pools' `in_use`; its `warm` says how many of them warm pools hold)."""
        return self._used[pool]

    def free(self, pool: str) -> int | None:
        """Instances nobody holds; None for a pool without a limit."""
        capacity = self.capacity(pool)
        return None if capacity is None else capacity - self._used[pool]

    def releasing(self, pool: str) -> int:
        return self._releasing[pool]

    def fits(self, demand: Mapping[str, int]) -> bool:
        """Every pool has the instances free right now (a heterogeneous job needs all of them)."""
        return all(self.lack(pool, count, counting_releasing=False) <= 0 for pool, count in demand.items())

    def fits_once_released(self, demand: Mapping[str, int]) -> bool:
        """Every pool will have the instances once the stops already in flight land."""
        return all(self.lack(pool, count, counting_releasing=True) <= 0 for pool, count in demand.items())

    def lack(self, pool: str, count: int, *, counting_releasing: bool) -> int:
        """Instances of `pool` missing for `count` (≤ 0 when they are there)."""
        free = self.free(pool)
        if free is None:
            return 0
        return count - free - (self._releasing[pool] if counting_releasing else 0)

    # Teams

    def team(self, job: Job | Candidate) -> str:
        return self._teams.team_of(job.team)

    def quota(self, team: str, pool: str) -> int | None:
        return self._teams.quota(team, pool, self.capacity(pool))

    def claim(self, team: str, pool: str) -> int:
        """What counts against `team`'s quota: a team that may not borrow counts its stops in flight
        until their instances are given back, so it never holds more than its quota."""
        releasing = self._held_releasing[team, pool] if self.may_borrow(team) else 0
        return self._held[team, pool] - releasing + self._kept[team, pool]

    def may_borrow(self, team: str) -> bool:
        """`team` may run beyond its quota: it lends and borrows, and its borrow limit is not 0."""
        return self._teams.sharing(team).borrows and self._teams.borrow_limit(team) != 0

    def releasing_of(self, team: str, pool: str) -> int:
        """Instances of `pool` `team`'s stopping jobs are giving back."""
        return self._held_releasing[team, pool]

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
        return max(self._held[team, pool] - self._held_releasing[team, pool] - quota, 0)

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

    def available(self, team: str, pool: str) -> int | None:
        """Free instances of `pool` that `team` may use: the free ones less the idle quota other
        teams reserve; None for a pool without a limit."""
        free = self.free(pool)
        return None if free is None else free - self.reserved(pool, besides=team)

    def lenders(self, pool: str, count: int) -> list[tuple[str, int]]:
        """Whose idle quota `count` more borrowed instances of `pool` run on: what `lent_by`
        attributes with them, less what it attributed to the borrowing already counted."""
        teams = self._teams.names()
        idle = {team: self.idle(team, pool) for team in teams}
        quotas = {team: self.quota(team, pool) or 0 for team in teams}
        borrowed = sum(max(self.claim(team, pool) - quotas[team], 0) for team in teams)
        before, after = lent_by(borrowed, idle, self._teams), lent_by(borrowed + count, idle, self._teams)
        return [(team, after[team] - before.get(team, 0)) for team in after if after[team] > before.get(team, 0)]

    def whole(self, team: str, pool: str) -> bool:
        """`team`'s quota is the whole of `pool`: no other group has a share there (the unassigned
        group without quotas), so its reasons need not name a quota."""
        capacity = self.capacity(pool)
        return capacity is not None and self.quota(team, pool) == capacity

    def lent_to(self, team: str, pools: Iterable[str]) -> bool:
        """Another group lends idle quota in one of `pools`: a job of `team` there may borrow it, or
        a borrower may take it first (never true without quotas: the unassigned group is alone)."""
        return any(
            self.idle(other, pool) > 0
            for pool in pools
            for other in self._teams.names()
            if other != team and self._teams.sharing(other).lends
        )

    def held_share(self, team: str) -> float:
        """Instances the team holds over all pools, per instance of its quota."""
        held = sum(count for (group, _), count in self._held.items() if group == team)
        return held / self._teams.weight(team, self._config.pools)

    # Decisions

    def take(self, demand: Mapping[str, int], team: str | None = None) -> None:
        """A start (or a wait) was decided: its instances are used from now on in this pass, and
        count against `team`'s quota when one is named."""
        self._used.update(demand)
        if team is not None:
            self._kept.update({(team, pool): count for pool, count in demand.items()})

    def keep(self, team: str, demand: Mapping[str, int]) -> None:
        """Keep for a waiting job of `team` the free instances it may use (never idle quota other
        teams reserve) and, for the rest, instances on their way back, which nobody else counts on."""
        from_free, from_releasing = {}, {}
        for pool, need in demand.items():
            available = self.available(team, pool)
            if available is None:
                continue
            from_free[pool] = min(need, max(available, 0))
            from_releasing[pool] = need - from_free[pool]
        self._used.update(from_free)
        self._releasing.subtract(from_releasing)
        self._kept.update({(team, pool): count for pool, count in demand.items()})

    def hand_over(self, warm: WarmPool) -> None:
        """A job starts on `warm`: its instances are the job's from now on (the start takes them)."""
        self._used.subtract(warm.demand)

    def release_warm(self, warm: WarmPool) -> None:
        """The queue ends `warm`: its instances count as on their way back."""
        self._releasing.update(warm.demand)

    def release(self, jobs: Iterable[Job]) -> None:
        """Preemptions were decided: their instances count as on their way back."""
        for job in jobs:
            self._releasing.update(job.held)
            self._held_releasing.update({(self.team(job), pool): count for pool, count in job.held.items()})
