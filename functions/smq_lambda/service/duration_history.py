"""Learning durations: each completed job adds its total training to the summaries of its family,
its owner's instance type and its instance type (forecast/durations.py), so later estimates need no
scan of history.

Told of every end report of the queue's own attempts, duplicates and late ones included
(ports.TrainingEndListener); only the report that completes a job counts, and the store counts a
job once per summary (by job id), so a repeat adds nothing. A failed write fails the report, whose
redelivery adds what is missing.
"""

from __future__ import annotations

from collections.abc import Iterable

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.forecast.durations import (
    NO_HISTORY,
    DurationHistory,
    DurationKey,
    completed_duration,
    earlier_keys,
    keys_for,
)
from smq_lambda.ports import DurationStore


class DurationRecorder:
    """A TrainingEndListener that adds completed jobs' durations to the DurationStore."""

    def __init__(self, store: DurationStore) -> None:
        self._store = store

    def on_training_end(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        current = job.current_attempt
        if job.state is not JobState.COMPLETED or current is None or current.number != attempt_number:
            return
        seconds = completed_duration(job)
        if seconds is None:
            return
        for key in keys_for(job):
            self._store.add(key, job.job_id, seconds)


def load_history(store: DurationStore | None, jobs: Iterable[Job]) -> DurationHistory:
    """The summaries `jobs` may need (none for a job with an expected-duration tag): one batched
    read of the distinct keys, so its cost follows the jobs estimated, not the history kept."""
    if store is None:
        return NO_HISTORY
    keys: set[DurationKey] = {
        key for job in jobs if job.expected_duration_s is None for key in (*keys_for(job), *earlier_keys(job))
    }
    return store.load(keys) if keys else NO_HISTORY
