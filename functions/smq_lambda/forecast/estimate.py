"""When will my job start? Each pending job's estimated start, from replaying the queue forward
with the real scheduling code (see `queue_replay` for what a replay assumes).

How long each job still needs, in this order:

1. tagged: its `smq:expected-duration` tag (`Job.expected_duration_s`), less the training it has
   already done: the time since its current attempt started, and for a job that waits again after
   a preemption, a spot fallback or an infrastructure failure, its earlier attempts (started to
   ended) as well, since it resumes from its checkpoint. That is the job's history. Attempts no
   longer kept in full (beyond the 20 most recent) are not counted.
2. max runtime: its request's MaxRuntimeInSeconds (`Job.max_runtime_s`), less the time since its
   current attempt started (a starting or running one): an upper bound, as SageMaker stops an
   attempt then. It bounds each attempt, so a job that waits again gets the whole of it.
3. unknown: neither. The job never ends in the replay, so a job that needs its instances gets no
   time (`at` None) and is told which job it waits for.

A job gets at least MIN_REMAINING_S, however long it overran its duration.

Bounded cost: only the first `max_jobs` pending jobs in queue order are estimated, and only they
and the live jobs are replayed (later jobs could only backfill beside them, or take a share as
another team); the replay stops when all of them started, when virtual time passes `horizon`, or
after `max_events` events (a job's end, a stop landing, a pass; about three per start). A pass is
one `decide` over the live jobs and those pending jobs, so an estimate costs at most `max_events`
passes; 200 pending jobs behind 60 live ones in two pools of 64 take about 0.2 s (1 s with
backfill, whose passes try every waiting job beside the heads) on one core. Jobs left without a
time at the bound say so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from smq_lambda.domain.durations import EXPECTED_DURATION_TAG
from smq_lambda.domain.model import Job
from smq_lambda.domain.outcomes import AttemptOutcome
from smq_lambda.domain.states import JobState
from smq_lambda.forecast.queue_replay import Replay
from smq_lambda.ports import StartEstimate
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

DEFAULT_HORIZON = timedelta(days=7)
DEFAULT_MAX_JOBS = 200
DEFAULT_MAX_EVENTS = 3_000
MIN_REMAINING_S = 60.0
RESUMING_OUTCOMES = frozenset(
    {AttemptOutcome.PREEMPTED, AttemptOutcome.SPOT_FALLBACK, AttemptOutcome.INFRASTRUCTURE_FAILURE}
)
"""Attempts whose training a job keeps: it waits again and resumes from its checkpoint."""
NO_ARRIVALS = "no new higher-priority jobs"


class Source(StrEnum):
    TAGGED = "tagged"
    MAX_RUNTIME = "max-runtime"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Remaining:
    seconds: float
    """Training still needed once it trains; math.inf when unknown."""
    source: Source


def remaining(job: Job, now: datetime) -> Remaining:
    """How long `job` still trains, and what says so (see the module docstring)."""
    attempt = job.current_attempt
    current = 0.0
    if job.is_live and attempt is not None:
        until = job.updated_at if job.state in (JobState.PREEMPTING, JobState.STOPPING) and job.updated_at else now
        current = max((min(until, now) - attempt.started_at).total_seconds(), 0.0)
    if job.expected_duration_s is not None:
        left = job.expected_duration_s - current - trained_before(job)
        return Remaining(max(left, MIN_REMAINING_S), Source.TAGGED)
    if job.max_runtime_s is not None:
        this_attempt = current if job.state in (JobState.STARTING, JobState.RUNNING) else 0.0
        return Remaining(max(job.max_runtime_s - this_attempt, MIN_REMAINING_S), Source.MAX_RUNTIME)
    return Remaining(math.inf, Source.UNKNOWN)


def trained_before(job: Job) -> float:
    """Seconds the job trained in its ended attempts that it resumes from (kept in full only)."""
    return sum(
        max((attempt.ended_at - attempt.started_at).total_seconds(), 0.0)
        for attempt in job.attempts
        if attempt.ended_at is not None and attempt.outcome in RESUMING_OUTCOMES
    )


def estimate_starts(
    snapshot: Snapshot,
    now: datetime,
    config: SchedulerConfig,
    *,
    horizon: timedelta = DEFAULT_HORIZON,
    max_jobs: int = DEFAULT_MAX_JOBS,
    max_events: int = DEFAULT_MAX_EVENTS,
) -> dict[str, StartEstimate]:
    """The estimated start of the first `max_jobs` pending jobs of `snapshot` (queue order), by
    job name. Pure: replays a copy, in virtual time."""
    pending = sorted((job for job in snapshot.jobs if job.state is JobState.PENDING), key=lambda job: job.order)
    targets = pending[: max(max_jobs, 0)]
    if not targets:
        return {}
    jobs = (*(job for job in snapshot.jobs if job.is_live), *targets)
    left = {job.name: remaining(job, now) for job in jobs}
    replay = Replay(
        Snapshot(jobs=jobs, external_usage=snapshot.external_usage, team_usage=snapshot.team_usage),
        now,
        config,
        {name: value.seconds for name, value in left.items()},
        [job.name for job in targets],
    )
    replay.play(until_s=horizon.total_seconds(), max_events=max_events)
    cut_short = bool(replay.waiting) and bool(replay.events) and replay.events[0][0] <= horizon.total_seconds()
    holding = replay.still_holding()
    estimates = {}
    for job in targets:
        outside = _outside(job, snapshot.external_usage)
        if job.name in replay.started:
            at = now + timedelta(seconds=replay.started[job.name])
            sources = Counter(left[name].source for name in replay.ahead[job.name])
            estimates[job.name] = StartEstimate(job.name, at, assumes(sources) + outside)
        else:
            why = _not_started(job, config, holding, left, horizon, cut_short=cut_short)
            estimates[job.name] = StartEstimate(job.name, None, why + outside)
    return estimates


def assumes(sources: Mapping[Source, int]) -> str:
    """`assumes 3 jobs ahead run as tagged (smq:expected-duration) and 2 for their
    MaxRuntimeInSeconds (an upper bound); no new higher-priority jobs`."""
    tagged, bounded = sources.get(Source.TAGGED, 0), sources.get(Source.MAX_RUNTIME, 0)
    if not tagged and not bounded:
        return f"no job ahead has to finish first; assumes {NO_ARRIVALS}"
    first = tagged or bounded
    subject = f"{first} job{'s' if first > 1 else ''} ahead run{'' if first > 1 else 's'}"
    tag = f"as tagged ({EXPECTED_DURATION_TAG})"
    if tagged and bounded:
        bound = f"{bounded} for {'their' if bounded > 1 else 'its'} MaxRuntimeInSeconds (an upper bound)"
        return f"assumes {subject} {tag} and {bound}; {NO_ARRIVALS}"
    if tagged:
        return f"assumes {subject} {tag}; {NO_ARRIVALS}"
    return (
        f"assumes {subject} for {'their' if bounded > 1 else 'its'} MaxRuntimeInSeconds (an upper bound); {NO_ARRIVALS}"
    )


def _not_started(
    job: Job,
    config: SchedulerConfig,
    holding: Iterable[Job],
    left: Mapping[str, Remaining],
    horizon: timedelta,
    *,
    cut_short: bool,
) -> str:
    for pool, count in job.demand.items():
        capacity = config.capacity(pool)
        if capacity is not None and count > capacity:
            return f"never starts as configured: it needs {count} instances of {pool}, which has {capacity}"
    unknown = sorted(
        other.name
        for other in holding
        if left[other.name].source is Source.UNKNOWN and not set(other.demand).isdisjoint(job.demand)
    )
    if unknown:
        names = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        return (
            f"unknown: it waits for {names}, whose duration is unknown "
            f"(no {EXPECTED_DURATION_TAG} tag, no MaxRuntimeInSeconds)"
        )
    if cut_short:
        return "not estimated: the replay reached its bound on events before it started"
    return f"not within {_days(horizon)} of replay; assumes {NO_ARRIVALS}"


def _outside(job: Job, external_usage: Mapping[str, int]) -> str:
    held = sum(count for pool, count in external_usage.items() if pool in job.demand and count > 0)
    if not held:
        return ""
    if held == 1:
        return "; the instance used outside the queue stays busy"
    return f"; the {held} instances used outside the queue stay busy"


def _days(horizon: timedelta) -> str:
    hours = horizon.total_seconds() / 3600
    if hours >= 24 and hours % 24 == 0:
        days = int(hours // 24)
        return f"{days} day{'s' if days > 1 else ''}"
    return f"{hours:g} hour{'' if hours == 1 else 's'}"
