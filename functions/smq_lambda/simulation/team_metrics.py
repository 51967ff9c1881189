"""What a simulation measures per team when the configuration has team quotas, integrated over
virtual time between events like the pool meters of metrics.py (nothing changes between two
events, so every figure is exact, not sampled).

A job counts for its group: its configured team, or the unassigned group (reported when it has
jobs). Per group and pool (the pools where it has a quota, held instances or waited):

- `share_of_capacity`: the instances its jobs held (starting, running, stopping) over the pool's
  capacity, averaged over the makespan; `share_of_quota`: the same over its quota (null for a
  quota of 0).
- `borrowed_instance_s`: instance-seconds it held beyond its quota.
- `lent_instance_s`: instance-seconds of its idle quota that other groups' borrowed instances ran
  on. At every moment the instances borrowed in the pool are attributed to the idle quota of the
  groups that lend by the one rule of `domain.config.teams.lent_by` (in proportion to idle quota).
- `quota_kept`: of the time the group had pending work in the pool (`pending_s`), the share in
  which it held at least min(quota, its demand), counted in whole jobs as the scheduler places
  them, or was waiting only for a stop in flight (a reclaim takes one stop). It falls short while
  its first pending job in queue order (priority, then submission; aging not counted) fits in its
  quota beside the instances it holds, unless jobs of other groups are giving instances back and
  those with the free ones cover the job. Free instances alone do not count: a pass has run at
  the moment of every event (or, with a pass delay, is about to), so a job they would fit and
  that still waits is held back. 1.0 when it never waited.

Per group:

- `wait_s`: submission to first start of its jobs (p50, p95, max; a job never started waits until
  the end of the run).
- `reclaim_latency_s`: for each reclaim made for it (a preemption whose stopped job is of another
  group than the job it makes room for), the time from the pass that decided it until the job it
  made room for started (p50, max over those that started; `reclaims` counts all of them and
  `unresolved` those whose job never started).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smq_lambda.domain.config.teams import UNASSIGNED, Teams, held_in_pools, lent_by
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import RELEASING_STATES, JobState
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.actions import Action, PreemptJob, StartJob
from smq_lambda.simulation.metrics import percentiles

GroupPool = tuple[str, str]


@dataclass
class TeamPoolMeter:
    quota: int
    held_s: float = 0.0
    borrowed_s: float = 0.0
    lent_s: float = 0.0
    pending_s: float = 0.0
    short_s: float = 0.0

    @property
    def active(self) -> bool:
        return bool(self.quota or self.held_s or self.pending_s)

    def report(self, capacity: int, makespan: float) -> dict[str, Any]:
        return {
            "quota": self.quota,
            "share_of_capacity": _share(self.held_s, capacity * makespan),
            "share_of_quota": _share(self.held_s, self.quota * makespan) if self.quota else None,
            "borrowed_instance_s": round(self.borrowed_s, 3),
            "lent_instance_s": round(self.lent_s, 3),
            "pending_s": round(self.pending_s, 3),
            "quota_kept": round(1.0 - self.short_s / self.pending_s, 6) if self.pending_s else 1.0,
        }


class TeamMeters:
    """Accumulates the per-team figures while the engine advances the clock and runs passes."""

    def __init__(self, teams: Teams, pools: Mapping[str, int]) -> None:
        self.teams = teams
        self.pools = dict(pools)
        self.meters = {
            (group, pool): TeamPoolMeter(teams.quota(group, pool, capacity) or 0)
            for group in teams.names()
            for pool, capacity in self.pools.items()
        }
        self.first_start: dict[str, float] = {}
        self.awaiting: dict[str, list[tuple[str, float]]] = {}
        """Per job that reclaims were made for and that has not started since: (its group, when)."""
        self.latencies: defaultdict[str, list[float]] = defaultdict(list)

    def group(self, job: Job) -> str:
        return self.teams.team_of(job.team)

    def observe(self, jobs: Iterable[Job], start: float, end: float) -> None:
        """Integrate the moment of `jobs` (every job of the simulation) over [start, end)."""
        span = end - start
        if span <= 0:
            return
        jobs = list(jobs)
        held = held_in_pools(jobs, self.teams)
        releasing = held_in_pools((job for job in jobs if job.state in RELEASING_STATES), self.teams)
        first: dict[GroupPool, Job] = {}
        for job in jobs:
            group = self.group(job)
            if job.state is JobState.PENDING:
                for pool in job.demand:
                    current = first.get((group, pool))
                    if current is None or job.order < current.order:
                        first[group, pool] = job
        for pool in self.pools:
            self._observe_pool(pool, span, held, releasing, first)

    def _observe_pool(
        self,
        pool: str,
        span: float,
        held: Mapping[GroupPool, int],
        releasing: Mapping[GroupPool, int],
        first: Mapping[GroupPool, Job],
    ) -> None:
        groups = self.teams.names()
        on_the_way_back = sum(releasing.get((group, pool), 0) for group in groups)
        free = self.pools[pool] - sum(held.get((group, pool), 0) for group in groups)
        borrowed = 0
        idle: dict[str, int] = {}
        for group in groups:
            meter, holding = self.meters[group, pool], held.get((group, pool), 0)
            meter.held_s += span * holding
            meter.borrowed_s += span * max(holding - meter.quota, 0)
            borrowed += max(holding - meter.quota, 0)
            idle[group] = max(meter.quota - holding, 0)
            job = first.get((group, pool))
            if job is not None:
                meter.pending_s += span
                need, back = job.demand[pool], on_the_way_back - releasing.get((group, pool), 0)
                if need <= meter.quota - holding and not (back and need <= free + back):
                    meter.short_s += span
        for group, lent in lent_by(borrowed, idle, self.teams).items():
            self.meters[group, pool].lent_s += span * lent

    def decided(self, actions: Sequence[Action], jobs: Mapping[str, Job], now: float) -> None:
        """A pass's `actions`, once applied to `jobs`: reclaims made, jobs started."""
        for action in actions:
            if isinstance(action, PreemptJob):
                target, beneficiary = jobs.get(action.job_name), jobs.get(action.for_job)
                if target is None or beneficiary is None or target.state not in RELEASING_STATES:
                    continue  # not applied (SageMaker refused a start earlier in the pass)
                if self.group(target) != self.group(beneficiary):
                    self.awaiting.setdefault(action.for_job, []).append((self.group(beneficiary), now))
        for action in actions:
            job = jobs.get(action.job_name)
            if not isinstance(action, StartJob) or job is None or job.state is not JobState.STARTING:
                continue
            attempt = job.current_attempt
            if attempt is None or attempt.number != action.attempt:
                continue
            self.first_start.setdefault(job.name, now)
            for group, decided in self.awaiting.pop(job.name, []):
                self.latencies[group].append(now - decided)

    def report(self, makespan: float, trace: Iterable[TraceJob]) -> dict[str, Any]:
        waits: defaultdict[str, list[float]] = defaultdict(list)
        for job in trace:
            group = self.teams.team_of(job.team)
            waits[group].append(self.first_start.get(job.name, makespan) - job.submit_s)
        unresolved = Counter(group for entries in self.awaiting.values() for group, _ in entries)
        report = {}
        for group in self.teams.names():
            if group == UNASSIGNED and not waits[group]:
                continue
            latency = percentiles(self.latencies[group])
            report[group] = {
                "jobs": len(waits[group]),
                "wait_s": percentiles(waits[group]),
                "reclaims": len(self.latencies[group]) + unresolved[group],
                "unresolved_reclaims": unresolved[group],
                "reclaim_latency_s": {"p50": latency["p50"], "max": latency["max"]},
                "pools": {
                    pool: self.meters[group, pool].report(capacity, makespan)
                    for pool, capacity in self.pools.items()
                    if self.meters[group, pool].active
                },
            }
        return report


def _share(part: float, whole: float) -> float:
    return round(part / whole, 6) if whole else 0.0
