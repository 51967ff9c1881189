"""How long a job will train, learned from the jobs like it that completed.

A job without an `smq:expected-duration` tag is expected to train about as long as the recent
completed jobs most like it, looked up at three levels, the most specific first:

1. family: the same owner and job family (`family_of`: its `smq:family` tag, else its name without
   a trailing counter or timestamp);
2. owner-pool: the same owner and instance type;
3. pool: anyone's jobs of the instance type.

The instance type (`duration_type`) is the one its attempt was placed on, else the job's own, never
the pool: a spot job runs in its type's spot pool (`<type>:spot`) but waits listed under its type,
and a job on a training plan in the plan's pool, so a key by pool would be learned under one name
and looked up under another. Spot and on-demand runs of a type share what was learned: the type
trains as fast either way, and an interruption's lost time is already in a completed job's total.
(The levels keep their names, `owner-pool` and `pool`, as the items of earlier releases do: those
releases kept the durations of a type's spot pool and its training plans' pools apart, and those
items are still read, as older durations of the type: `earlier_keys`.)

The first level with at least MIN_SAMPLES durations gives a band: its BAND_PERCENTILES (low,
likely, high), each capped by the job's MaxRuntimeInSeconds, since SageMaker stops an attempt then.
When no level has that many, the most specific one with any gives the likely duration (their
median) but no spread: the band is everything the job can take, 0 to MaxRuntimeInSeconds. With no
history at all, MaxRuntimeInSeconds is the only bound: a ceiling, not a guess (`Basis.MAX_RUNTIME`,
likely = high = MaxRuntimeInSeconds, low = 0, since the job may end at any moment before). A tag is
the user's own statement, a point (low = likely = high).

A duration is a completed job's total training: the wall-clock time its attempts held their
instances, resumed attempts included (see service/duration_history.py), since that is what the
jobs behind it wait for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.placements.purchase import spot_pool

FAMILY_TAG = "smq:family"
"""The tag that names a job's family outright (kept as `Job.family` at submission)."""
MAX_SAMPLES = 50
"""Durations a summary keeps, the most recent: enough for the band's percentiles, small enough for one item."""
MAX_COUNTED_JOBS = 50
"""Job ids a summary remembers having counted, so a repeated completion report adds nothing."""
MIN_SAMPLES = 3
"""Durations a level needs before its percentiles are trusted; below that, the next level."""
BAND_PERCENTILES = (5.0, 50.0, 95.0)
"""Low, likely and high. A wait often ends with one job's end, so a band as wide as the durations'
interquartile range holds at best half the starts; and a start also moves with what the replay does
not foresee (new jobs of higher priority, work redone after a stop), so each duration's range must
hold more than the share of starts wanted (0.8): the 10th-90th percentiles held 0.66-0.83 of the
starts in simulation, the 5th-95th 0.73-0.84 (docs/benchmarks.md, before the late end's overrun)."""
RESUMING_OUTCOMES = frozenset(
    {
        AttemptOutcome.PREEMPTED,
        AttemptOutcome.PLAN_WINDOW_CLOSED,
        AttemptOutcome.SPOT_FALLBACK,
        AttemptOutcome.INFRASTRUCTURE_FAILURE,
    }
)
"""Attempts whose training a job keeps: it waits again and resumes from its checkpoint."""

_HYPHENATED_NUMBERS = re.compile(r"(?:-[0-9]+)+$")
"""`-3`, `-20261126-101500`, `-2026-11-26-10-15-00-123` (the SageMaker SDK's `name_from_base`)."""
_BARE_COUNTER = re.compile(r"[0-9]+$")
"""`job3`."""


class Level(StrEnum):
    FAMILY = "family"
    OWNER_POOL = "owner-pool"
    POOL = "pool"


class Basis(StrEnum):
    """What a DurationBand rests on."""

    TAG = "tag"
    FAMILY = "family"
    OWNER_POOL = "owner-pool"
    POOL = "pool"
    MAX_RUNTIME = "max-runtime"
    """No history: MaxRuntimeInSeconds, a ceiling."""
    UNKNOWN = "unknown"
    """No tag, no history, no MaxRuntimeInSeconds: the band is infinite."""

    @property
    def learned(self) -> bool:
        return self in LEARNED


LEARNED = frozenset({Basis.FAMILY, Basis.OWNER_POOL, Basis.POOL})


@dataclass(frozen=True, order=True)
class DurationKey:
    """One summary's key: the level and, joined by '#', what it is per (owner, family), (owner,
    pool) or pool."""

    level: Level
    key: str

    @property
    def item_key(self) -> str:
        """`family#user/alice#resnet`: the key as the store writes it."""
        return f"{self.level}#{self.key}"


def family_of_name(name: str) -> str:
    """A job name without its trailing counter or timestamp: every trailing group of digits that
    a hyphen introduces (`train-7`, `bert-20261126-101500`, `vit-2026-11-26-10-15-00-123` →
    `train`, `bert`, `vit`), else trailing digits (`job3` → `job`); the name itself when that
    would leave nothing (`12345`)."""
    stripped = _HYPHENATED_NUMBERS.sub("", name)
    if stripped == name:
        stripped = _BARE_COUNTER.sub("", name)
    return stripped.rstrip("-") or name


def family_of(job: Job) -> str:
    """The job's family: its `smq:family` tag, else its name's family (`family_of_name`)."""
    return job.family or family_of_name(job.name)


def duration_type(job: Job) -> str:
    """The instance type the job's durations are learned and looked up under: its current (or last)
    attempt's placement's, else the job's (a waiting flexible job's first preference, the first
    instance group's)."""
    attempt = job.current_attempt
    if attempt is not None and attempt.placement is not None:
        return attempt.placement.instance_type
    return next(iter(job.where.instance_types))


def keys_for(job: Job) -> tuple[DurationKey, DurationKey, DurationKey]:
    """The job's summaries, the most specific first: (owner, family), (owner, type), type."""
    instance_type = duration_type(job)
    return (
        DurationKey(Level.FAMILY, f"{job.owner}#{family_of(job)}"),
        DurationKey(Level.OWNER_POOL, f"{job.owner}#{instance_type}"),
        DurationKey(Level.POOL, instance_type),
    )


def earlier_keys(job: Job) -> tuple[DurationKey, ...]:
    """Where earlier releases kept durations of the job's type by pool rather than by type: the
    type's spot pool and the pools of the training plans the job names, at the owner's level and
    everyone's. Read only, as older durations of the type's levels (`expected_duration`)."""
    instance_type = duration_type(job)
    plans = (placement.pool for placement in job.placements if placement.instance_type == instance_type)
    pools = dict.fromkeys((spot_pool(instance_type), *(pool for pool in plans if pool)))
    return (
        *(DurationKey(Level.OWNER_POOL, f"{job.owner}#{pool}") for pool in pools),
        *(DurationKey(Level.POOL, pool) for pool in pools),
    )


@dataclass(frozen=True)
class DurationSummary:
    """The recent durations of one key, bounded: at most MAX_SAMPLES seconds values, newest last,
    and the ids of the last MAX_COUNTED_JOBS jobs counted (a job is counted once)."""

    seconds: tuple[float, ...] = ()
    counted: tuple[str, ...] = ()

    def after(self, earlier: DurationSummary) -> DurationSummary:
        """This summary's durations with `earlier`'s before them (older), bounded as a summary is."""
        return DurationSummary(
            seconds=(*earlier.seconds, *self.seconds)[-MAX_SAMPLES:],
            counted=(*earlier.counted, *self.counted)[-MAX_COUNTED_JOBS:],
        )

    def with_duration(self, job_id: str, seconds: float) -> DurationSummary:
        """This summary with a job's duration added; itself when the job was already counted."""
        if job_id in self.counted:
            return self
        return DurationSummary(
            seconds=(*self.seconds, float(seconds))[-MAX_SAMPLES:],
            counted=(*self.counted, job_id)[-MAX_COUNTED_JOBS:],
        )

    def percentile(self, q: float) -> float:
        """The q-th percentile (0-100) of the durations, interpolated between the nearest two."""
        if not self.seconds:
            raise ValueError("no durations")
        ordered = sorted(self.seconds)
        rank = (len(ordered) - 1) * min(max(q, 0.0), 100.0) / 100.0
        below, above = math.floor(rank), math.ceil(rank)
        return ordered[below] + (ordered[above] - ordered[below]) * (rank - below)


@dataclass(frozen=True)
class DurationHistory:
    """The summaries a pass loaded, by key (those it did not load, or that have no history, are
    absent)."""

    summaries: Mapping[DurationKey, DurationSummary]

    def get(self, key: DurationKey) -> DurationSummary | None:
        return self.summaries.get(key)


NO_HISTORY = DurationHistory({})


@dataclass(frozen=True)
class DurationBand:
    """How long a job trains in all: low ≤ likely ≤ high, in seconds (math.inf when unknown)."""

    low_s: float
    likely_s: float
    high_s: float
    basis: Basis
    samples: int = 0
    """Durations the band was learned from (0 unless learned)."""

    @property
    def ends(self) -> tuple[float, float, float]:
        return (self.low_s, self.likely_s, self.high_s)


def expected_duration(job: Job, history: DurationHistory) -> DurationBand:
    """The job's band: its tag, else the first level of `history` with MIN_SAMPLES durations,
    capped by MaxRuntimeInSeconds, else the first with fewer (its median, within 0 to the cap),
    else MaxRuntimeInSeconds as a ceiling (see the module)."""
    if job.expected_duration_s is not None:
        tagged = float(job.expected_duration_s)
        return DurationBand(tagged, tagged, tagged, Basis.TAG)
    cap = math.inf if job.max_runtime_s is None else float(job.max_runtime_s)
    summaries = [(key, summary) for key in keys_for(job) if (summary := _read(key, job, history)).seconds]
    for key, summary in summaries:
        if len(summary.seconds) >= MIN_SAMPLES:
            low, likely, high = (min(summary.percentile(q), cap) for q in BAND_PERCENTILES)
            return DurationBand(low, likely, high, Basis(key.level.value), len(summary.seconds))
    if summaries:
        key, summary = summaries[0]
        return DurationBand(0.0, min(summary.percentile(50.0), cap), cap, Basis(key.level.value), len(summary.seconds))
    if math.isinf(cap):
        return DurationBand(cap, cap, cap, Basis.UNKNOWN)
    return DurationBand(0.0, cap, cap, Basis.MAX_RUNTIME)


def _read(key: DurationKey, job: Job, history: DurationHistory) -> DurationSummary:
    """The summary of `key`, after what earlier releases kept for its level (`earlier_keys`)."""
    summary = history.get(key) or DurationSummary()
    for earlier in earlier_keys(job):
        kept = history.get(earlier)
        if earlier.level is key.level and kept is not None:
            summary = summary.after(kept)
    return summary


def trained_before(job: Job) -> float:
    """Seconds the job trained in its ended attempts that it resumes from (kept in full only)."""
    return sum(
        max((attempt.ended_at - attempt.started_at).total_seconds(), 0.0)
        for attempt in job.attempts
        if attempt.ended_at is not None and attempt.outcome in RESUMING_OUTCOMES
    )


def completed_duration(job: Job) -> float | None:
    """A completed job's total training: its completing attempt (started to ended) and the earlier
    attempts it resumed from; None unless the job's current attempt completed it."""
    attempt = job.current_attempt
    if attempt is None or attempt.outcome is not AttemptOutcome.COMPLETED or attempt.ended_at is None:
        return None
    return max((attempt.ended_at - attempt.started_at).total_seconds(), 0.0) + trained_before(job)
