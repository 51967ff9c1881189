"""A scheduling pass with team quotas: each team first within its own quota, then borrowing.

1. **Within quota.** Each team walks its own pending jobs in its own priority order (strict: a
   team's first waiting job holds back its later jobs in that pool). A job whose instances fit in
   the team's idle quota starts when they are free. When they are not, jobs of other teams that run
   on borrowed capacity are stopped for it *whatever their priority*, least progress first (the
   latest start), counting stops in flight; the preemption rules do not protect them, since they
   ran on capacity only lent to them. The instances are kept for it until they come back.
2. **Borrowing.** The first job of each team that would exceed its quota may borrow, teams taken
   in fair-share order: the smallest decayed usage per instance of quota first (Kueue's admission
   fair sharing, AWS Batch's share decay; `domain.teams.decay_usage`), then the smallest share held
   now. It borrows when its team lends and borrows, stays within its borrow limit, and the pool's
   free instances cover it without the idle quota of teams that reserve theirs.
3. **Priority inside a team.** A job that may not borrow stops lower-priority jobs *of its own team*
   (the priority rule of the queue without teams, with the preemption rules' protection): as many as
   it lacks when its team may go on borrowing what it holds (a swap inside the team), else enough
   to get back within its quota, reclaiming from borrowers whatever its quota still lacks.

Backfill applies to the queue without quotas only: with quotas, idle capacity goes to borrowers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from smq_lambda.domain.model import Job
from smq_lambda.scheduling import quota_reasons
from smq_lambda.scheduling.aging import Boost
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.pass_state import PassState, limited
from smq_lambda.scheduling.preemption import RECLAIMABLE_STATES, covers, minimal, select_targets
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.scheduling.team_ledger import TeamLedger


class QuotaPass(PassState):
    def __init__(
        self, snapshot: Snapshot, now: datetime, config: SchedulerConfig, ledger: Ledger, boosts: Mapping[str, Boost]
    ) -> None:
        super().__init__(snapshot, now, config, ledger, boosts)
        self.teams = TeamLedger(snapshot, config)
        self.usage = snapshot.team_usage
        self.team_heads: defaultdict[str, dict[str, Job]] = defaultdict(dict)
        """Per team and pool, the team's first waiting job."""

    def run(self, pending: Sequence[Job]) -> None:
        """Decide over `pending`, in queue order."""
        borrowers = sorted((job for job in pending if self._within_quota(job)), key=self._fair_share)
        for job in borrowers:
            self._borrow(job)

    def _fair_share(self, job: Job) -> tuple[float, float, tuple[int, datetime, str]]:
        team = self.teams.team(job)
        weight = self.config.teams.weight(team, self.config.pools)
        return (self.usage.get(team, 0.0) / weight, self.teams.held_share(team), job.order)

    def _within_quota(self, job: Job) -> bool:
        """Step 1 for one job; True when it is its team's first job beyond its quota (a borrower)."""
        if self.skip(job):
            return False
        team = self.teams.team(job)
        if self._never_within_reach(job, team):
            return False
        if any(pool in self.team_heads[team] for pool in job.demand):
            return False
        beyond = self.teams.beyond_quota(team, job.demand)
        self._wait(job, team)
        if beyond:
            return True
        self._within(job, team)
        return False

    def _within(self, job: Job, team: str) -> None:
        """`job` fits in its team's quota: it starts when its instances are free, else room is made."""
        lack = self._lack(job, team)
        if not any(lack.values()):
            self._release_heads(job, team)
            quotas = {pool: (self.teams.claim(team, pool), self.teams.quota(team, pool) or 0) for pool in job.demand}
            self.admit(job, reason=quota_reasons.within_quota(team, self.views(job.demand), quotas))
            self.teams.take(team, job.demand)
            return
        self._make_room(job, team)

    def _borrow(self, job: Job) -> None:
        """Steps 2 and 3 for a team's first job beyond its quota."""
        team = self.teams.team(job)
        beyond = self.teams.beyond_quota(team, job.demand)
        if not beyond:  # reclaims decided for earlier borrowers brought its team back within its quota
            self._within(job, team)
            return
        why_not = self._why_not_borrow(team, job.demand, beyond)
        if why_not is None:
            self._release_heads(job, team)
            borrowed = {pool: min(n, job.demand[pool]) for pool, n in beyond.items()}
            lenders = {pool: self.teams.lenders(pool, n) for pool, n in borrowed.items()}
            self.admit(job, reason=quota_reasons.borrowing(team, borrowed, lenders))
            self.teams.take(team, job.demand)
            return
        candidates, protected = self.priority_candidates(job, among=lambda other: self.teams.team(other) == team)
        room = self._own_room(job, team, beyond)
        own = select_targets(room, candidates)
        if own is None:
            self.explain(job, quota_reasons.at_quota(team, beyond, why_not, protected))
            return
        self.preempt(
            own,
            job,
            lambda target: quota_reasons.preempted_in_team(team, job.name, job.priority, target.priority, beyond),
        )
        self.teams.release(own)
        self._make_room(job, team, released_for_it=room)

    def _own_room(self, job: Job, team: str, beyond: Mapping[str, int]) -> dict[str, int]:
        """What `job`'s own team must stop for it: a team that may go on borrowing what it holds
        swaps jobs (the instances `job` lacks); any other gets back within its quota."""
        limit = self.config.teams.borrow_limit(team)
        if not self.config.teams.sharing(team).borrows or (
            limit is not None and any(over > limit for over in beyond.values())
        ):
            return dict(beyond)
        return {pool: n for pool, n in self._lack(job, team).items() if n > 0}

    def _make_room(self, job: Job, team: str, released_for_it: Mapping[str, int] | None = None) -> None:
        """`job` fits in its team's quota but not in the instances free for it: borrowed jobs of
        other teams are stopped for what the stops in flight do not cover, and the instances it
        waits for are kept for it. `released_for_it`: what its own team's jobs stopped for it give
        back, which it waits for even when free instances would cover it (its quota does not)."""
        shortfall = {pool: n for pool, n in self._lack(job, team, counting_releasing=True).items() if n > 0}
        if shortfall:
            targets = self._reclaim_targets(team, shortfall)
            if targets is None:
                short = next(iter(shortfall))
                self.explain(job, quota_reasons.no_room_within_quota(team, self.view(short, job.demand[short])))
                return
            self._reclaim(job, team, targets)
        waits = {pool: n for pool, n in self._lack(job, team).items() if n > 0}
        for pool, n in (released_for_it or {}).items():
            waits[pool] = max(waits.get(pool, 0), n)
        self.explain(job, quota_reasons.awaiting_release(team, waits))
        self._keep(job, team)

    def _lack(self, job: Job, team: str, *, counting_releasing: bool = False) -> dict[str, int]:
        """Per pool, instances `job` lacks: free ones, less the idle quota other teams reserve,
        (and less those on their way back, when `counting_releasing`) do not cover its need."""
        lack = {}
        for pool, need in job.demand.items():
            free = self.ledger.free(pool)
            if free is None:
                continue
            releasing = self.ledger.releasing(pool) if counting_releasing else 0
            lack[pool] = max(need - (free - self.teams.reserved(pool, besides=team)) - releasing, 0)
        return lack

    def _never_within_reach(self, job: Job, team: str) -> bool:
        """A job larger than its team may ever hold (its quota, plus what it may borrow: up to its
        borrow limit, never the quota of teams that reserve theirs) is explained and holds back
        nothing, like a job larger than its pool."""
        teams = self.config.teams
        sharing, limit = teams.sharing(team), teams.borrow_limit(team)
        for pool, need in job.demand.items():
            quota, capacity = self.teams.quota(team, pool), self.config.capacity(pool)
            if quota is None or capacity is None:
                continue
            reserved = sum(
                teams.quota(other, pool, capacity) or 0
                for other in teams.names()
                if other != team and not teams.sharing(other).lends
            )
            reach = capacity - reserved
            if not sharing.borrows:
                reach = quota
            elif limit is not None:
                reach = min(reach, quota + limit)
            if need > reach:
                self.explain(job, quota_reasons.beyond_reach(team, pool, need, reach))
                return True
        return False

    def _why_not_borrow(self, team: str, demand: Mapping[str, int], beyond: Mapping[str, int]) -> str | None:
        sharing = self.config.teams.sharing(team)
        if not sharing.borrows:
            return f"its sharing is {sharing.value}"
        limit = self.config.teams.borrow_limit(team)
        if limit is not None:
            for pool, over in beyond.items():
                if over > limit:
                    return f"it would borrow {over} of {pool}, its borrow limit is {limit}"
        for pool, need in demand.items():
            free = self.ledger.free(pool)
            if free is None:
                continue
            reserved = self.teams.reserved(pool, besides=team)
            if need > free - reserved:
                kept = f", {reserved} of them idle quota that other teams reserve" if reserved else ""
                return f"{max(free, 0)} {pool} free{kept}"
        return None

    def _reclaim_targets(self, team: str, shortfall: Mapping[str, int]) -> Sequence[Job] | None:
        """The live jobs of other teams running on borrowed capacity that cover `shortfall`, least
        progress first, never taking a team below its quota; None when they cannot cover it."""
        over = {
            (other, pool): self.teams.borrowing(other, pool)
            for other in self.config.teams.names()
            if other != team
            for pool in shortfall
        }
        candidates = sorted(
            (
                job
                for job in self.live.values()
                if job.state in RECLAIMABLE_STATES and job.current_attempt is not None and self.teams.team(job) != team
            ),
            key=_least_progress,
        )
        chosen: list[Job] = []
        for job in candidates:
            if covers(chosen, shortfall):
                break
            owner = self.teams.team(job)
            if any(job.demand.get(pool, 0) and over[owner, pool] > 0 for pool in shortfall):
                chosen.append(job)
                for pool in shortfall:
                    over[owner, pool] -= job.demand.get(pool, 0)
        return minimal(chosen, shortfall)

    def _reclaim(self, job: Job, team: str, targets: Sequence[Job]) -> None:
        def reason(target: Job) -> str:
            owner = self.teams.team(target)
            pools = [pool for pool in target.demand if self.teams.borrowing(owner, pool) > 0]
            return quota_reasons.reclaimed(team, job.name, owner, pools or list(target.demand))

        self.preempt(targets, job, reason)
        self.teams.release(targets)

    def _wait(self, job: Job, team: str) -> None:
        """`job` is its team's first job in its pools (until it starts)."""
        for pool in limited(job.demand, self.ledger):
            self.team_heads[team].setdefault(pool, job)
            self.heads.setdefault(pool, job)

    def _release_heads(self, job: Job, team: str) -> None:
        """`job` starts: it holds back nothing."""
        for pool in job.demand:
            if self.team_heads[team].get(pool) is job:
                del self.team_heads[team][pool]
            if self.heads.get(pool) is job:
                del self.heads[pool]

    def _keep(self, job: Job, team: str) -> None:
        """Keep for `job`, waiting, the free instances it may use (never idle quota others reserve)
        and, for the rest, instances on their way back."""
        from_free, from_releasing = {}, {}
        for pool, need in job.demand.items():
            free = self.ledger.free(pool)
            if free is None:
                continue
            from_free[pool] = min(need, max(free - self.teams.reserved(pool, besides=team), 0))
            from_releasing[pool] = need - from_free[pool]
        self.ledger.take(from_free)
        self.ledger.claim_releasing(from_releasing)
        self.teams.take(team, job.demand)


def _least_progress(job: Job) -> tuple[float, str]:
    attempt = job.current_attempt
    started = attempt.started_at.timestamp() if attempt is not None else float("-inf")
    return (-started, job.name)
