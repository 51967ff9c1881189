"""How often SageMaker interrupts spot training, per instance type: a decayed rate (Lunit's
adaptive spot policy).

Each interruption counts once, when a report of its attempt first shows it: SageMaker's reports
carry the attempt's whole `SecondaryStatusTransitions` history, so the book keeps, per attempt, how
many `Interrupted` entries it counted already; a duplicate or late report adds nothing. The book
keeps the times of the interruptions themselves (the last KEEP_FOR, at most MAX_PER_TYPE per
type), and the rate is computed when read, with the half-life then configured:

    rate(now) = Σ 2^(-(now - t) / half_life) · ln 2 / half_life        (interruptions per hour)

which is the rate of a steady stream of interruptions, and decays by half every half-life once
they stop. A changed half-life applies at once, to past interruptions too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

KEEP_FOR = timedelta(days=30)
"""Interruptions older than this add under 2^-120 to a rate of the default half-life (6 hours)."""
MAX_PER_TYPE = 200
MAX_ATTEMPTS = 1000
"""Attempts whose interruptions the book remembers (the most recently interrupted): keeps the item
far below DynamoDB's 400 KB."""


@dataclass(frozen=True)
class Counted:
    """How many interruptions of one attempt the book counted, and when it last counted one."""

    interruptions: int
    at: datetime


@dataclass(frozen=True)
class SpotInterruptions:
    """The book: per instance type, the times of its recent interruptions (oldest first); per
    attempt (its training job name), what was counted. `version` orders writes."""

    by_type: Mapping[str, tuple[datetime, ...]] = field(default_factory=dict)
    counted: Mapping[str, Counted] = field(default_factory=dict)
    version: int = 0


def with_interruptions(
    book: SpotInterruptions, training_job_name: str, instance_type: str, interruptions: int, now: datetime
) -> SpotInterruptions | None:
    """`book` with the interruptions of the attempt its report shows beyond those counted already
    (each at `now`); None when there are none: the report adds nothing."""
    counted = book.counted.get(training_job_name)
    new = interruptions - (counted.interruptions if counted is not None else 0)
    if new <= 0:
        return None
    since = now - KEEP_FOR
    by_type = {**book.by_type, instance_type: (*book.by_type.get(instance_type, ()), *(now,) * new)}
    kept = {kind: tuple(time for time in times if time > since)[-MAX_PER_TYPE:] for kind, times in by_type.items()}
    attempts = {**book.counted, training_job_name: Counted(interruptions, now)}
    recent = sorted(attempts.items(), key=lambda entry: entry[1].at)[-MAX_ATTEMPTS:]
    return replace(
        book,
        by_type={kind: times for kind, times in kept.items() if times},
        counted={name: entry for name, entry in recent if entry.at > since},
        version=book.version + 1,
    )


def rate_per_hour(times: tuple[datetime, ...], now: datetime, half_life_s: float) -> float:
    """The decayed rate of interruptions at `times` (see the module docstring)."""
    decayed = sum(0.5 ** (max((now - time).total_seconds(), 0.0) / half_life_s) for time in times)
    return decayed * math.log(2) * 3600 / half_life_s


def rates(book: SpotInterruptions, now: datetime, half_life_s: float) -> dict[str, float]:
    """Each instance type's rate of interruptions per hour at `now`."""
    return {kind: rate_per_hour(times, now, half_life_s) for kind, times in book.by_type.items()}
