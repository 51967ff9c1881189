"""The start estimates a pass publishes, and how right the earlier ones were.

Estimates (forecast/estimate.py) are made from the durations learned so far: the pass loads the
summaries of the jobs it estimates and no others (service/duration_history.py). A failure costs
the estimates of that pass, never the pass.

Accuracy: the pass summaries keep, for each job a pass estimated, the first estimate any pass gave it since
it last waited (`PassSummary.first_estimates`), carried from summary to summary; when the job
starts, its start is measured against that estimate (forecast/accuracy.py) for the pass's metrics,
and the estimate is dropped. A job the passes stop estimating (cancelled, or beyond the fronts)
drops its first estimate with its estimate; a pass that made no estimates carries them all.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import datetime

from aws_lambda_powertools import Logger

from smq_lambda.domain.jobs.model import Job
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.forecast.accuracy import StartAccuracy, measure_start
from smq_lambda.forecast.estimate import estimate_starts, estimated_jobs
from smq_lambda.forecast.start_estimate import GivenEstimate, StartEstimate
from smq_lambda.pass_summary import PassSummary
from smq_lambda.ports import DurationStore, PassSummaries
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.service.duration_history import load_history

logger = Logger(service="smq", child=True)


class StartEstimates:
    def __init__(self, durations: DurationStore | None, summaries: PassSummaries | None) -> None:
        self._durations = durations
        self._summaries = summaries

    def estimate(
        self, snapshot: Snapshot, now: datetime, config: SchedulerConfig, time_left: Callable[[], float] | None = None
    ) -> dict[str, StartEstimate]:
        """Start estimates for the pending jobs of `snapshot` (bounded: see forecast/estimate.py),
        those `time_left` allows (a deadline: forecast/estimate.py says how they degrade)."""
        try:
            jobs = [*(job for job in snapshot.jobs if job.is_live), *estimated_jobs(snapshot)]
            return estimate_starts(snapshot, now, config, load_history(self._durations, jobs), time_left=time_left)
        except Exception:
            logger.exception("start estimates failed; this pass publishes none")
            return {}

    def latest(self) -> PassSummary | None:
        """The last summary published (None before the first, or when it cannot be read now): read
        once a pass, for the estimates and first estimates it carries."""
        if self._summaries is None:
            return None
        try:
            return self._summaries.latest()
        except ServiceUnavailable as exc:
            logger.warning("could not read the last summary's estimates; they start over", extra={"error": str(exc)})
            return None


def carried(previous: PassSummary | None, waiting: Collection[str]) -> dict[str, StartEstimate]:
    """The `previous` summary's estimates of the jobs still `waiting`, each with the time it was
    computed: what a pass publishes until its own estimates are made (after its lease), and keeps
    for the jobs its deadline left unestimated."""
    if previous is None:
        return {}
    return {
        name: replace(estimate, computed_at=estimate.computed_at or previous.measured_at)
        for name, estimate in previous.estimates.items()
        if name in waiting
    }


def keep_first(
    summary: PassSummary, started: Sequence[Job], previous: PassSummary | None
) -> tuple[PassSummary, list[StartAccuracy]]:
    """`summary` with the first estimates carried over from the `previous` summary and its own
    estimates' added (`with_first`); and each started job's start measured against its first
    estimate."""
    given = dict(previous.first_estimates) if previous is not None else {}
    accuracy = []
    for job in started:
        attempt = job.current_attempt
        if job.name in given and attempt is not None:
            accuracy.append(measure_start(given.pop(job.name), attempt.started_at))
    return with_first(replace(summary, first_estimates=given)), accuracy


def with_first(summary: PassSummary) -> PassSummary:
    """`summary` whose first estimates are those of the jobs it estimates: the ones it carries,
    else its own estimate, as given when computed (a summary without estimates carries them all)."""
    if not summary.estimates:
        return summary
    given = summary.first_estimates
    first = {
        name: given.get(name) or first_given(estimate, estimate.computed_at or summary.measured_at)
        for name, estimate in summary.estimates.items()
        if name in given or estimate.at is not None
    }
    return replace(summary, first_estimates=first)


def first_given(estimate: StartEstimate, given_at: datetime) -> GivenEstimate:
    """A published estimate, as the first one a job was given (`estimate.at` is set)."""
    assert estimate.at is not None
    return GivenEstimate(
        job_name=estimate.job_name,
        given_at=given_at,
        earliest=estimate.earliest or estimate.at,
        likely=estimate.at,
        latest=estimate.latest,
    )
