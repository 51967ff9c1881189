"""Where a job stands and why, as every read of the API shows it: a pending job's place in each
pool it waits in (counted in the table now), its reason, and its estimated start from what the last
pass published.

The use cases (service/queue_api.py) answer with a job thus placed whatever they did to it; how it
is placed is one computation of its own, with its own reads (index counts, the pass's summary).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from smq_lambda.domain.costs.costs import CostEstimate
from smq_lambda.domain.jobs.model import Job, order_key
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.ports import ConfigSource, JobStore, PassSummaries
from smq_lambda.scheduling import quota_reasons, reasons
from smq_lambda.service.pass_summary_reader import EstimatedStart, PassSummaryReader


@dataclass(frozen=True)
class PositionedJob:
    """A job, its 1-based place among the pending jobs of its pool (None unless pending), and why it
    is where it is: the stored reason, or for a job waiting behind a head, one computed now."""

    job: Job
    position: int | None
    reason: str | None
    estimated_start: EstimatedStart | None = None
    """When the last pass expected the job to start; None unless pending and estimated."""
    estimate_at_next_pass: bool = False
    """A pending job no pass has seen as it is (just submitted, or changed since): the next pass,
    within seconds, estimates its start. The API does not replay the queue itself: that needs what
    a pass reads (the live jobs, the pools' fronts, the learned durations), on the request's path."""
    estimated_cost: CostEstimate | None = None
    """What the job is expected to cost under the prices in force; None when unpriced."""


class JobPositions:
    """Places jobs over the table (`store`), the configuration in force (`config`) and what the last
    pass published (`pass_summaries`; None: no pass ever did, so no job has an estimate)."""

    def __init__(self, store: JobStore, config: ConfigSource, pass_summaries: PassSummaries | None) -> None:
        self._store = store
        self._config = config
        self._pass_summaries = pass_summaries

    def of(self, job: Job) -> PositionedJob:
        """One job placed: a live job explained, a pending one also counted in its pools."""
        if job.is_live:
            return self._explained(job, None, self._last_summary())
        if job.state is not JobState.PENDING:
            return PositionedJob(job, None, job.reason)
        return self._explained(job, self._places([job]).get(job.name), self._last_summary())

    def of_each(self, jobs: Sequence[Job]) -> list[PositionedJob]:
        """A page of jobs placed, in its order, reading the last pass summary once for all of them."""
        places = self._places([job for job in jobs if job.state is JobState.PENDING])
        last_summary = self._last_summary()
        return [self._explained(job, places.get(job.name), last_summary) for job in jobs]

    def _places(self, pending: list[Job]) -> dict[str, dict[str, int]]:
        """Each pending job's 1-based place in each pool it waits in (`Job.where.pools`: a job that
        may use several is listed in each): per pool, one count up to the first job and then one
        count of the span between each job and the next."""
        places: dict[str, dict[str, int]] = {job.name: {} for job in pending}
        by_pool: dict[str, list[Job]] = {}
        for job in pending:
            for pool in job.where.pools:
                by_pool.setdefault(pool, []).append(job)
        for pool, jobs in by_pool.items():
            previous: str | None = None
            place = 0
            for job in sorted(jobs, key=lambda job: job.order):
                key = order_key(job.priority, job.submitted_at, job.name)
                place += 1 + self._store.count_pending(pool, after=previous, before=key)
                places[job.name][pool] = place
                previous = key
        return places

    def _last_summary(self) -> PassSummaryReader | None:
        summary = self._pass_summaries.latest() if self._pass_summaries is not None else None
        if summary is None:
            return None
        heads = {measure.pool: measure.head for measure in summary.pools if measure.head}
        return PassSummaryReader(heads, summary.measured_at, summary.estimates, summary.teams, summary.explained)

    def _explained(
        self, job: Job, places: Mapping[str, int] | None, last_summary: PassSummaryReader | None
    ) -> PositionedJob:
        """`_reasoned`, with the job's estimated start when the last pass estimated it as it is."""
        entry = self._reasoned(job, places or {}, last_summary)
        if job.state is JobState.PENDING and (last_summary is None or not last_summary.current_for(job)):
            entry = replace(entry, estimate_at_next_pass=True)
        if last_summary is None:
            return entry
        borrowing = last_summary.borrowing(job)
        if borrowing is not None:
            entry = replace(entry, reason=f"{entry.reason}; {borrowing}" if entry.reason else borrowing)
        estimate = last_summary.estimate_for(job)
        return entry if estimate is None else replace(entry, estimated_start=estimate)

    def _reasoned(self, job: Job, places: Mapping[str, int], last_summary: PassSummaryReader | None) -> PositionedJob:
        """A pending job's reason is the one the passes wrote when it is news: the last pass explained
        it (a head, a job a gate held, a job a phase decided: `PassSummaryReader.wrote_reason_of`), or no
        pass has seen it as it is yet. Otherwise the job waits behind a head, and its reason is its
        place in each pool it waits in, computed now (noting a team no longer configured). Its
        position is its place in the pool it is listed under."""
        position = places.get(job.where.pool)
        if (
            position is None
            or last_summary is None
            or not last_summary.current_for(job)
            or last_summary.wrote_reason_of(job)
        ):
            return PositionedJob(job, position, job.reason)
        place = reasons.queued_in_each(
            [(places[pool] - 1, pool, last_summary.by_pool.get(pool)) for pool in job.where.pools if pool in places]
        )
        return PositionedJob(job, position, quota_reasons.noting_team(place, job.team, self._config.load().teams))
