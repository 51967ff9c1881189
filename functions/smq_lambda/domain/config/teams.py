"""Teams and their quotas: who owns which share of each pool, and what they may lend and borrow.

A job's team is the value of its team tag (the key is `Teams.tag`, "team" unless configured),
fixed when the job is submitted, as a queue is fixed for a Kueue workload or a share identifier for
an AWS Batch job. While quotas are configured a job must name a configured team or none
(service/submission.py). No team tag, or a team the configuration no longer names (removed since,
or quotas configured after the job was queued), puts the job in the *unassigned* group, whose
quota is what the teams leave of each pool; its reason says so.

Sharing modes, as AWS Batch's quota shares name them:

* `reserve`: the team's idle quota is kept for it, and it never runs beyond its quota;
* `lend`: the team's idle quota may run other teams' jobs, reclaimed when it needs it back; it
  never runs beyond its quota;
* `lend_and_borrow` (the default): it lends, and it may also run beyond its quota on idle quota of
  others, up to `borrow_limit` instances per pool. The unassigned group lends and borrows.

With no quotas configured every job is unassigned and the unassigned quota is the whole pool, so
scheduling is exactly what it is without teams.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from smq_lambda.domain.jobs.model import Job

DEFAULT_TEAM_TAG = "team"
DEFAULT_USAGE_HALF_LIFE_S = 3600
UNASSIGNED = "(unassigned)"
"""The group of jobs of no configured team; not a valid tag value, so no team can take its name."""


def named(team: str) -> str:
    """`team` in a sentence: the unassigned group reads as its jobs."""
    return "unassigned jobs" if team == UNASSIGNED else team


class Sharing(StrEnum):
    RESERVE = "reserve"
    LEND = "lend"
    LEND_AND_BORROW = "lend_and_borrow"

    @property
    def lends(self) -> bool:
        return self is not Sharing.RESERVE

    @property
    def borrows(self) -> bool:
        return self is Sharing.LEND_AND_BORROW


@dataclass(frozen=True)
class Quota:
    """One team's share: instances per pool it is guaranteed, and how it shares them."""

    instances: Mapping[str, int]
    sharing: Sharing = Sharing.LEND_AND_BORROW
    borrow_limit: int | None = None
    """Instances per pool the team may run beyond its quota; None: as many as are idle."""

    @property
    def weight(self) -> int:
        """The team's size for fair share: its quota over all pools (at least 1)."""
        return max(sum(self.instances.values()), 1)


@dataclass(frozen=True)
class Teams:
    """The teams section of the configuration document."""

    tag: str = DEFAULT_TEAM_TAG
    quotas: Mapping[str, Quota] = field(default_factory=dict)
    usage_half_life_s: int = DEFAULT_USAGE_HALF_LIFE_S
    """How fast a team's past use fades from its fair share (see `decay_usage`)."""

    @property
    def enabled(self) -> bool:
        return bool(self.quotas)

    def team_of(self, team: str | None) -> str:
        """The group a job tagged `team` schedules in: a configured team, or UNASSIGNED."""
        return team if team is not None and team in self.quotas else UNASSIGNED

    def unconfigured(self, team: str | None) -> bool:
        """Whether a job tagged `team` names a team the configuration does not (submission refuses
        such a tag while quotas are configured, so the team was removed, or quotas came later): it
        runs as unassigned."""
        return self.enabled and bool(team) and team not in self.quotas

    def names(self) -> list[str]:
        """Every group, configured teams in name order, then UNASSIGNED."""
        return [*sorted(self.quotas), UNASSIGNED]

    def quota(self, team: str, pool: str, capacity: int | None) -> int | None:
        """Instances of `pool` guaranteed to `team`; the unassigned group has what the teams leave.
        None for a pool without a limit."""
        if capacity is None:
            return None
        if team == UNASSIGNED:
            return max(capacity - sum(quota.instances.get(pool, 0) for quota in self.quotas.values()), 0)
        return self.quotas[team].instances.get(pool, 0)

    def reach(self, team: str, pool: str, capacity: int | None) -> int | None:
        """The most instances of `pool` `team` may ever hold: its quota, plus what it may borrow (up
        to its borrow limit, never the quota of teams that reserve theirs). None for a pool without
        a limit; the whole pool without quotas."""
        quota = self.quota(team, pool, capacity)
        if quota is None or capacity is None:
            return None
        if not self.sharing(team).borrows:
            return quota
        reserved = sum(
            self.quota(other, pool, capacity) or 0
            for other in self.names()
            if other != team and not self.sharing(other).lends
        )
        limit = self.borrow_limit(team)
        return capacity - reserved if limit is None else min(capacity - reserved, quota + limit)

    def sharing(self, team: str) -> Sharing:
        return Sharing.LEND_AND_BORROW if team == UNASSIGNED else self.quotas[team].sharing

    def borrow_limit(self, team: str) -> int | None:
        return None if team == UNASSIGNED else self.quotas[team].borrow_limit

    def weight(self, team: str, pools: Mapping[str, int]) -> int:
        """The team's size for fair share (the unassigned group: the remainder of every pool)."""
        if team == UNASSIGNED:
            return max(sum(self.quota(UNASSIGNED, pool, capacity) or 0 for pool, capacity in pools.items()), 1)
        return self.quotas[team].weight


@dataclass(frozen=True)
class PreemptionRules:
    """What protects a running job from being stopped for a higher-priority one.

    Neither rule holds back a reclaim: a job running on capacity its team borrowed is stopped when
    the lender needs it back, however long it ran and however often it was preempted before."""

    min_runtime_s: int = 0
    """A job is not preempted for priority within this many seconds after its attempt started."""
    max_preemptions: int | None = None
    """A job preempted this many times is not preempted again for priority; None: no limit."""


QUOTA_PREEMPTION_DEFAULTS = PreemptionRules(min_runtime_s=600, max_preemptions=3)
"""The rules a configuration with quotas gets unless it says otherwise. Without quotas the defaults
are PreemptionRules(): no protection, exactly the queue's behaviour before teams."""


@dataclass(frozen=True)
class Aging:
    """A pending job's priority rises by `per_hour` for each hour it waited, up to `cap` points
    (default off). The wait counts from submission, or from the end of its last attempt."""

    per_hour: float = 0.0
    cap: int = 0

    @property
    def enabled(self) -> bool:
        return self.per_hour > 0 and self.cap > 0


def lent_by(borrowed: int, idle: Mapping[str, int], teams: Teams) -> dict[str, int]:
    """Whose idle quota `borrowed` instances of a pool run on. Nothing records it (a pool is one
    pool: a borrowed instance runs on no particular team's quota), so one rule says it, wherever
    it is shown (reasons, GET /quotas, the simulation): the borrowed instances are divided over the
    idle quota (`idle`, per group) of the groups that lend, in proportion to it, by largest
    remainder (ties in `Teams.names()` order). No group lends more than its idle quota; borrowing
    beyond what the lenders have idle (a pool that shrank, a reserving team's idle quota used
    before a change of sharing) is lent by no one."""
    order = teams.names()
    shares = {team: idle.get(team, 0) for team in order if teams.sharing(team).lends and idle.get(team, 0) > 0}
    total = sum(shares.values())
    amount = min(max(borrowed, 0), total)
    if amount == 0:
        return {}
    parts = {team: amount * share // total for team, share in shares.items()}
    left = amount - sum(parts.values())
    for team in sorted(shares, key=lambda name: (-(amount * shares[name] % total), order.index(name)))[:left]:
        parts[team] += 1
    return {team: part for team, part in parts.items() if part > 0}


def decay_usage(
    previous: Mapping[str, float], elapsed_s: float, held: Mapping[str, int], half_life_s: float
) -> dict[str, float]:
    """Each team's past use after `elapsed_s` more seconds in which it held `held` instances (all
    pools together): the old value halves every `half_life_s`, and the new interval is added in
    instance-seconds, decayed from its middle. This is Kueue's admission fair sharing and AWS
    Batch's share decay: a team that used much lately yields to one that did not, and forgiveness
    comes at a known pace. Teams whose usage fell below a hundredth of an instance-second are
    dropped."""
    factor = math.pow(0.5, max(elapsed_s, 0.0) / half_life_s) if half_life_s > 0 else 0.0
    middle = math.pow(0.5, max(elapsed_s, 0.0) / 2 / half_life_s) if half_life_s > 0 else 1.0
    usage = {team: value * factor for team, value in previous.items()}
    for team, instances in held.items():
        usage[team] = usage.get(team, 0.0) + instances * max(elapsed_s, 0.0) * middle
    return {team: value for team, value in usage.items() if value >= 0.01}


def held_in_pools(jobs: Iterable[Job], teams: Teams) -> dict[tuple[str, str], int]:
    """Instances the live jobs among `jobs` hold, per (group, pool): the one count the scheduler's
    team ledger, the pass's team measures and the simulation's team meters start from."""
    held: dict[tuple[str, str], int] = {}
    for job in jobs:
        if job.is_live:
            group = teams.team_of(job.team)
            for pool, count in job.held.items():
                held[group, pool] = held.get((group, pool), 0) + count
    return held


def held_by_team(jobs: Iterable[Job], teams: Teams) -> dict[str, int]:
    """Instances each group's live jobs hold, all pools together: what `decay_usage` adds up, in
    the deployed scheduler and in the simulation alike."""
    held: dict[str, int] = {}
    for (group, _), count in held_in_pools(jobs, teams).items():
        held[group] = held.get(group, 0) + count
    return held
