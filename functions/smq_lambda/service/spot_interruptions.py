"""Spot interruptions counted from SageMaker's reports into the book (domain/placements/spot_rates.py), and
the rates a pass decides with.

Every report of an own attempt is looked at: SageMaker's reports carry the attempt's whole
`SecondaryStatusTransitions`, and the book counts only the `Interrupted` entries it has not counted
for that attempt, with a conditional write, so duplicate and late reports count nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.placements.spot_rates import rates, with_interruptions
from smq_lambda.errors import VersionConflict
from smq_lambda.governance.spot import interruptions
from smq_lambda.ports import SpotInterruptionBook, TrainingJobStatus
from smq_lambda.scheduling.snapshot import SchedulerConfig

COUNT_RETRIES = 5


def count_interruptions(
    book: SpotInterruptionBook, job: Job, attempt_number: int, status: TrainingJobStatus, now: datetime
) -> None:
    """Add the interruptions `status` shows for the job's attempt `attempt_number` that the book
    has not counted yet. A race lost COUNT_RETRIES times leaves them to the attempt's next report."""
    seen = interruptions(status.description())
    if seen == 0:
        return
    instance_type = _instance_type(job, attempt_number)
    for _ in range(COUNT_RETRIES):
        current = book.load()
        updated = with_interruptions(current, status.name, instance_type, seen, now)
        if updated is None:
            return
        try:
            book.save(updated, previous=current)
            return
        except VersionConflict:
            continue


def rates_for_pass(book: SpotInterruptionBook | None, config: SchedulerConfig, now: datetime) -> Mapping[str, float]:
    """Each type's interruptions per hour, read only when the `spot` section is adaptive."""
    adaptive = config.spot.adaptive if config.spot is not None else None
    if book is None or adaptive is None:
        return {}
    return rates(book.load(), now, adaptive.half_life_s)


def _instance_type(job: Job, attempt_number: int) -> str:
    """The type the attempt ran on: its placement's, else the job's own (a pinned job's pool)."""
    attempt = job.attempt(attempt_number)
    if attempt is not None and attempt.placement is not None:
        return attempt.placement.instance_type
    return next(iter(job.where.listed))
