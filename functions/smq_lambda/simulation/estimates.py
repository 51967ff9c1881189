"""The start estimates of a simulated run (`smq simulate --estimates`), made as the live queue
makes them and measured against the starts that followed (simulation/accuracy.py).

Before a pass, the pending jobs' starts are estimated from the snapshot that pass decides over, by
the live code (forecast/estimate.py, with its bounds: the first DEFAULT_MAX_JOBS pending jobs in
queue order, all of them replayed), two ways in the same run:

- `learned`: with the durations learned so far in this run, as the live queue learns them: each
  job that completes adds its total training (its attempts, started to ended, start-up included)
  to its family's, its owner's pool's and its pool's summaries (forecast/durations.py);
- `max_runtime`: with no history, so every job ahead is taken at its MaxRuntimeInSeconds (a
  ceiling: "at most", a band from its ending at once to it): the estimates before learned
  durations, for comparison.

Two sets of figures for each:

- `submission`: each job's first estimate of each wait: at its submission (the first pass that saw
  it pending), and again when a preempted or fallen-back job waits anew. The live queue measures
  the same estimate (`PassSummary.first_estimates`); the targets are on these.
- `passes`: every pending job's estimate at passes at least `every` apart in virtual time
  (SAMPLE_EVERY): how estimates hold as waits go on, a sample of what users see between
  submission and start.

Cost: a pass estimates only when a job awaits its first estimate or a sample is due, not at every
pass (one estimate per way: three replays learned, one max-runtime, each of every pending job
up to the live bound). Each replay runs until the deepest pending job starts, so a deep queue
costs the most: the 300 jobs of the generated `mixed-families` take minutes, the 120 of
`teams-families` seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.forecast.durations import (
    NO_HISTORY,
    DurationHistory,
    DurationKey,
    DurationSummary,
    completed_duration,
    keys_for,
)
from smq_lambda.forecast.estimate import estimate_starts, estimated_jobs
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.simulation.accuracy import AccuracyTally

SAMPLE_EVERY = timedelta(minutes=30)
WAYS = ("learned", "max_runtime")
MOMENTS = ("submission", "passes")


class EstimateRecorder:
    """Estimates a run's pending jobs before passes, learns from the jobs that complete, and
    measures each estimate when its job starts."""

    def __init__(self, config: SchedulerConfig, every: timedelta = SAMPLE_EVERY) -> None:
        self.config = config
        self.every = every
        self.sampled_at: datetime | None = None
        self.summaries: dict[DurationKey, DurationSummary] = {}
        self.tallies = {(way, moment): AccuracyTally() for way in WAYS for moment in MOMENTS}
        self.estimated: set[str] = set()
        """Jobs given their first estimate of the wait they are in."""
        self.passes = 0

    def history(self) -> DurationHistory:
        return DurationHistory(dict(self.summaries))

    def before_pass(self, snapshot: Snapshot, now: datetime) -> None:
        pending = estimated_jobs(snapshot)
        first = [job for job in pending if job.name not in self.estimated]
        sample = bool(pending) and (self.sampled_at is None or now - self.sampled_at >= self.every)
        if not first and not sample:
            return
        self.passes += 1
        if sample:
            self.sampled_at = now
        histories: Mapping[str, DurationHistory] = {"learned": self.history(), "max_runtime": NO_HISTORY}
        for way, history in histories.items():
            estimates = estimate_starts(snapshot, now, self.config, history)
            for job in first:
                self.tallies[(way, "submission")].give(estimates[job.name], job.priority, now)
            for job in pending if sample else ():
                self.tallies[(way, "passes")].give(estimates[job.name], job.priority, now)
        self.estimated.update(job.name for job in first)

    def started(self, job_name: str, now: datetime) -> None:
        self.estimated.discard(job_name)
        for tally in self.tallies.values():
            tally.started(job_name, now)

    def completing(self, job: Job, now: datetime) -> None:
        """`job`, running, completes now: its total training joins its summaries, as the live
        queue's DurationRecorder adds it (service/duration_history.py)."""
        finished = lifecycle.finish(job, JobState.COMPLETED, now, outcome=AttemptOutcome.COMPLETED, reason=None)
        seconds = completed_duration(finished)
        if seconds is None:
            return
        for key in keys_for(job):
            self.summaries[key] = self.summaries.get(key, DurationSummary()).with_duration(job.job_id, seconds)

    def report(self) -> dict[str, Any]:
        """Per way and moment, the figures of simulation/accuracy.py; how many passes estimated, and
        how far apart the samples of `passes` are."""
        figures: dict[str, Any] = {
            way: {moment: self.tallies[(way, moment)].report() for moment in MOMENTS} for way in WAYS
        }
        return {**figures, "estimating_passes": self.passes, "sample_every_s": self.every.total_seconds()}
