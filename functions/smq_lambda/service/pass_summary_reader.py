"""The pass summary (pass_summary.PassSummary) read back by the API: the head of each blocked pool
the last pass found, the start estimates and the team measures it made, and its pool usage under
today's capacities."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.forecast.start_estimate import EstimateKind, StartEstimate
from smq_lambda.pass_summary import PassSummary, PoolMeasure, TeamMeasure
from smq_lambda.scheduling.snapshot import SchedulerConfig


@dataclass(frozen=True)
class EstimatedStart:
    """A pending job's estimated start (forecast/estimate.py), from the last pass summary."""

    at: datetime | None
    assumed: str
    computed_at: datetime
    earliest: datetime | None = None
    latest: datetime | None = None
    kind: EstimateKind = EstimateKind.POINT


@dataclass(frozen=True)
class PassSummaryReader:
    """The last pass summary as the API reads it: the first waiting job of each blocked pool
    (`by_pool`), the pass's start estimates and its team measures."""

    by_pool: dict[str, str]
    measured_at: datetime
    estimates: Mapping[str, StartEstimate] = field(default_factory=dict)
    teams: tuple[TeamMeasure, ...] = ()
    explained: frozenset[str] | None = None
    """The jobs whose reason it wrote or found current (`Decision.explained`); None when its summary
    predates passes publishing them."""

    def wrote_reason_of(self, job: Job) -> bool:
        """The job's stored reason is the pass's own (it heads a pool, or the pass explained it);
        so when the summary does not say which jobs the pass explained."""
        return self.explained is None or job.name in self.explained or job.name in self.by_pool.values()

    def current_for(self, job: Job) -> bool:
        """The pass saw the job as it is (it has not changed since)."""
        return (job.updated_at or job.submitted_at) <= self.measured_at

    def borrowing(self, job: Job) -> str | None:
        """For a live job whose team runs beyond its quota in one of the job's pools (as the last
        pass measured), what that means for it: reclaim may stop it."""
        if not job.is_live or job.team is None:
            return None
        beyond = [
            f"{measure.borrowed} of {measure.pool}"
            for measure in self.teams
            if measure.team == job.team and measure.pool in job.demand and measure.borrowed > 0
        ]
        if not beyond:
            return None
        return (
            f"{job.team} is borrowing {' and '.join(beyond)} beyond its quota: when a lender needs its quota back, "
            f"{job.team}'s jobs with the least progress are stopped first"
        )

    def estimate_for(self, job: Job) -> EstimatedStart | None:
        """The estimated start of a pending job as the pass that computed it saw it (a job changed
        since, say reprioritized, waits for the next pass's). A pass out of time for estimates keeps
        the last ones, so `computed_at` may be older than the summary: a reader sees its age."""
        estimate = self.estimates.get(job.name)
        if estimate is None or job.state is not JobState.PENDING:
            return None
        computed_at = estimate.computed_at or self.measured_at
        if (job.updated_at or job.submitted_at) > computed_at:
            return None
        return EstimatedStart(
            estimate.at, estimate.assumed, computed_at, estimate.earliest, estimate.latest, estimate.kind
        )


def with_current_capacity(summary: PassSummary, config: SchedulerConfig) -> list[PoolMeasure]:
    """A pass's usage under the capacities configured now (an operator may have changed them since):
    every configured pool, then the unconfigured ones the pass saw in use or awaited."""
    measured = {usage.pool: usage for usage in summary.pools}
    names = [
        *config.pools,
        *(pool for pool, usage in measured.items() if pool not in config.pools and (usage.in_use or usage.head)),
    ]
    return [
        PoolMeasure(
            pool=pool,
            capacity=config.capacity(pool),
            in_use=measured[pool].in_use if pool in measured else 0,
            head=measured[pool].head if pool in measured else None,
            warm=measured[pool].warm if pool in measured else 0,
        )
        for pool in names
    ]
