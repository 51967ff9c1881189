"""When will my job start? Each pending job's estimated start, a band: the queue replayed forward
with the real scheduling code (see `queue_replay` for what a replay assumes), three times, with
every job's remaining training at the low, likely and high end of its duration band.

A job's duration band (forecast/durations.py): its `smq:expected-duration` tag (a point), else the
5th-95th percentiles of similar completed jobs (same owner and family, same owner and pool, same
pool), capped by its MaxRuntimeInSeconds, else MaxRuntimeInSeconds alone (a ceiling: the job ends
at the latest then, at the earliest at once), else unknown. So a start that waits only on ceilings
is told "at most": its band runs from now to the ceiling.

How long a job still needs, at each end of its band: the band less the training it has already
done; a job that overran it is given a tenth of that duration more, at most MIN_REMAINING_S (so a
one-minute job is not assumed to need another minute, nor a day-long one to end at once), except at
the high end: a job that outran even that is bounded only by its MaxRuntimeInSeconds. The
training done is the time since
its current attempt started, and for a job that waits again after a preemption, a spot fallback or
an infrastructure failure, its earlier attempts (started to ended) as well, since it resumes from
its checkpoint (attempts no longer kept in full, beyond the 20 most recent, are not counted). A
MaxRuntimeInSeconds bounds each attempt, so it is counted against the current attempt only. A job
of unknown duration never ends in the replay, so a job that needs its instances gets no time (`at`
None) and is told which job it waits for.

A stop (a preemption in flight, or one the replay's passes send) lands DEFAULT_STOP_S after it was
sent in the likely replay, at once in the early one and SAGEMAKER_STOP_S after in the late one: how
long SageMaker takes to stop a job is not learned; a stop can be quick (a trainer that checkpoints
on SIGTERM and exits), and SageMaker waits at most that long after SIGTERM.

The three starts are sorted, so earliest ≤ likely ≤ latest even where a shorter job ahead changes
the order in which the jobs behind it start; each is at or after the pass (`now`), and a job with
room now starts at the replay's first pass, `now`, in all three. When every duration is a point,
and no stop is in flight or sent, one replay gives all three; an end whose durations are all the
likely ones (the high end of ceilings and tags) replays apart only when a stop is.

Bounded cost: only the first `max_jobs` pending jobs in queue order are estimated, and only they
and the live jobs are replayed (later jobs could only backfill beside them, or take a share as
another team); each replay stops when all of them started, when virtual time passes `horizon`, or
after `max_events` events (a job's end, a stop landing, a pass; about three per start). A pass is
one `decide` over the live jobs and those pending jobs, so an estimate costs at most three times
`max_events` passes; one replay of 200 pending jobs behind 60 live ones in two pools of 64 takes
about 0.2 s (1 s with backfill, whose passes try every waiting job beside the heads) on one core.
Jobs left without a time at the bound say so.

Capacity as the pass sees it: a replay keeps the spot interruption rates the pass decided with
(adaptive spot) and steps at every training plan window's opening and close. Budgets as the pass
sees them: a replay holds jobs by their team's hold budget, its spend growing as attempts end (see
`queue_replay`); a job still held when the replay ends is told it starts when the budget allows (its
reset on the first of the next UTC month, or a raise), not a time. It does not hold
warm pools: their instances count as free, since the pass ends a warm pool for the first waiting
job that needs its instances and does not match it (scheduling/warm_pools.py), about a minute's
difference the estimate does not model.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from smq_lambda.domain.costs.budgets import next_month_start
from smq_lambda.domain.jobs.durations import EXPECTED_DURATION_TAG
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.forecast.durations import NO_HISTORY, Basis, DurationHistory, expected_duration, trained_before
from smq_lambda.forecast.queue_replay import Replay
from smq_lambda.forecast.start_estimate import EstimateKind, StartEstimate
from smq_lambda.replay.trace_job import DEFAULT_STOP_S
from smq_lambda.scheduling.budget_hold import budget_team
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

DEFAULT_HORIZON = timedelta(days=7)
DEFAULT_MAX_JOBS = 200
DEFAULT_MAX_EVENTS = 3_000
SAGEMAKER_STOP_S = 120.0
"""How long SageMaker waits after SIGTERM before it ends a stopped job (StopTrainingJob)."""
STOP_S_BY_END = (0.0, DEFAULT_STOP_S, SAGEMAKER_STOP_S)
UNBANDED = "; a point, not a band: the pass ran out of time to replay the band's ends"
"""What an estimate's `assumed` adds when the deadline left no time for the band (`time_left`)."""
"""How long a stop takes in the early, likely and late replays."""
MIN_REMAINING_S = 60.0
OVERRUN_SHARE = 0.1
NO_ARRIVALS = "no new higher-priority jobs"
STOPPING = frozenset({JobState.PREEMPTING, JobState.STOPPING})
"""A job whose stop is in flight: it trains no more, and its instances free when the stop lands."""


@dataclass(frozen=True)
class Remaining:
    """Training a job still needs once it trains, at each end of its band (math.inf: unknown)."""

    low_s: float
    likely_s: float
    high_s: float
    basis: Basis

    @property
    def ends(self) -> tuple[float, float, float]:
        return (self.low_s, self.likely_s, self.high_s)


def remaining(job: Job, now: datetime, history: DurationHistory = NO_HISTORY) -> Remaining:
    """How long `job` still trains, at each end of its band, and what says so (see the module)."""
    attempt = job.current_attempt
    current = 0.0
    if job.is_live and attempt is not None:
        until = job.updated_at if job.state in STOPPING and job.updated_at else now
        current = max((min(until, now) - attempt.started_at).total_seconds(), 0.0)
    this_attempt = current if job.state in (JobState.STARTING, JobState.RUNNING) else 0.0
    attempt_cap = math.inf if job.max_runtime_s is None else job.max_runtime_s - this_attempt
    band = expected_duration(job, history)
    if band.basis is Basis.UNKNOWN:
        return Remaining(math.inf, math.inf, math.inf, band.basis)
    done = this_attempt if band.basis is Basis.MAX_RUNTIME else current + trained_before(job)
    low, likely, high = (
        max(min(total - done, attempt_cap), min(OVERRUN_SHARE * total, MIN_REMAINING_S)) for total in band.ends
    )
    if done >= band.high_s:  # past what its kind takes: nothing but SageMaker's limit bounds it now
        high = max(attempt_cap, high)
    return Remaining(low, likely, high, band.basis)


def estimate_starts(
    snapshot: Snapshot,
    now: datetime,
    config: SchedulerConfig,
    history: DurationHistory = NO_HISTORY,
    *,
    horizon: timedelta = DEFAULT_HORIZON,
    max_jobs: int = DEFAULT_MAX_JOBS,
    max_events: int = DEFAULT_MAX_EVENTS,
    time_left: Callable[[], float] | None = None,
) -> dict[str, StartEstimate]:
    """The estimated start band of the first `max_jobs` pending jobs of `snapshot` (queue order),
    by job name, with durations learned from `history`. Pure: replays copies, in virtual time.

    `time_left`: seconds left for estimating (a deadline). Out of time, estimates degrade rather
    than run over, in this order: the band's other ends are not replayed (each estimate is a point,
    at its likely start); the likely replay stops where it is, and the jobs it had not started by
    then get no estimate (the caller keeps their last one); with no time at all, none do."""
    out_of_time = (lambda: time_left() <= 0) if time_left is not None else None
    targets = estimated_jobs(snapshot, max_jobs)
    if not targets or (out_of_time is not None and out_of_time()):
        return {}
    jobs = (*(job for job in snapshot.jobs if job.is_live), *targets)
    left = {job.name: remaining(job, now, history) for job in jobs}

    def played(end: int) -> Replay:
        durations = {name: value.ends[end] for name, value in left.items()}
        replay = _replay(snapshot, jobs, targets, now, config, durations, stop_s=STOP_S_BY_END[end])
        replay.play(until_s=horizon.total_seconds(), max_events=max_events, stop=out_of_time)
        return replay

    likely = played(1)
    stopped = likely.counts["preemptions"] + likely.counts["plan_window_stops"]
    stops = bool(stopped) or any(job.state in STOPPING for job in jobs)
    replays = {1: likely}
    for end in () if likely.interrupted else _other_ends(left.values(), stops=stops):
        replays[end] = played(end)
    banded = not any(replay.interrupted for replay in replays.values())
    cut_short = bool(likely.waiting) and bool(likely.events) and likely.events[0][0] <= horizon.total_seconds()
    holding = likely.still_holding()
    estimates = {}
    for job in targets:
        if likely.interrupted and job.name not in likely.started:
            continue
        outside = _outside(job, snapshot.external_usage)
        earliest, at, latest = _sorted_starts(replays if banded else {1: likely}, job.name)
        if job.name in likely.budget_held and math.isinf(at):
            estimates[job.name] = StartEstimate(job.name, None, _held_by_budget(job, now))
            continue
        if math.isinf(at):
            why = _not_started(job, config, holding, left, horizon, cut_short=cut_short)
            estimates[job.name] = StartEstimate(job.name, None, why + outside)
            continue
        sources = Counter(left[name].basis for name in likely.ahead.get(job.name, ()))
        estimates[job.name] = StartEstimate(
            job.name,
            now + timedelta(seconds=at),
            assumes(sources) + outside + ("" if banded else UNBANDED),
            earliest=now + timedelta(seconds=earliest),
            latest=None if math.isinf(latest) else now + timedelta(seconds=latest),
            kind=kind_of(sources) if banded else EstimateKind.POINT,
        )
    return estimates


def estimated_jobs(snapshot: Snapshot, max_jobs: int = DEFAULT_MAX_JOBS) -> list[Job]:
    """The pending jobs an estimate covers: the first `max_jobs` in queue order."""
    pending = sorted((job for job in snapshot.jobs if job.state is JobState.PENDING), key=lambda job: job.order)
    return pending[: max(max_jobs, 0)]


def _replay(
    snapshot: Snapshot,
    jobs: Sequence[Job],
    targets: Sequence[Job],
    now: datetime,
    config: SchedulerConfig,
    durations: Mapping[str, float],
    *,
    stop_s: float,
) -> Replay:
    return Replay(
        Snapshot(
            jobs=tuple(jobs),
            external_usage=snapshot.external_usage,
            team_usage=snapshot.team_usage,
            team_spend=snapshot.team_spend,
            prices=snapshot.prices,
            spot_rates=snapshot.spot_rates,
        ),
        now,
        config,
        durations,
        [job.name for job in targets],
        stop_s=stop_s,
    )


def _other_ends(left: Iterable[Remaining], *, stops: bool) -> tuple[int, ...]:
    """Which ends besides the likely one (0 low, 2 high) need a replay of their own: those where a
    stop lands sooner or later than in the likely replay, or some duration differs from the likely."""
    values = list(left)
    low = stops or any(value.low_s != value.likely_s for value in values)
    high = stops or any(value.high_s != value.likely_s for value in values)
    return (*((0,) if low else ()), *((2,) if high else ()))


def _sorted_starts(replays: Mapping[int, Replay], name: str) -> tuple[float, float, float]:
    """The job's start at each end, in seconds after now, sorted (math.inf: not started); an end
    without a replay of its own starts as the likely one."""
    starts = sorted(replays.get(end, replays[1]).started.get(name, math.inf) for end in (0, 1, 2))
    return (starts[0], starts[1], starts[2])


def kind_of(sources: Mapping[Basis, int]) -> EstimateKind:
    """A band when any duration ahead was learned; else a ceiling when any is a MaxRuntimeInSeconds;
    else a point (tags only, or nothing ahead)."""
    if any(count for basis, count in sources.items() if basis.learned):
        return EstimateKind.BAND
    if sources.get(Basis.MAX_RUNTIME, 0):
        return EstimateKind.CEILING
    return EstimateKind.POINT


def assumes(sources: Mapping[Basis, int]) -> str:
    """`assumes 5 jobs ahead run: 2 as tagged (smq:expected-duration), 2 as long as similar jobs
    that completed and 1 for its MaxRuntimeInSeconds (an upper bound); no new higher-priority jobs`."""
    tagged = sources.get(Basis.TAG, 0)
    learned = sum(count for basis, count in sources.items() if basis.learned)
    bounded = sources.get(Basis.MAX_RUNTIME, 0)
    total = tagged + learned + bounded
    if not total:
        return f"no job ahead has to finish first; assumes {NO_ARRIVALS}"
    parts = []
    if tagged:
        parts.append(f"{tagged} as tagged ({EXPECTED_DURATION_TAG})")
    if learned:
        parts.append(f"{learned} as long as similar jobs that completed")
    if bounded:
        parts.append(f"{bounded} for {'their' if bounded > 1 else 'its'} MaxRuntimeInSeconds (an upper bound)")
    subject = f"{total} job{'s' if total > 1 else ''} ahead run{'' if total > 1 else 's'}"
    if len(parts) == 1:
        return f"assumes {subject} {parts[0].split(' ', 1)[1]}; {NO_ARRIVALS}"
    listed = ", ".join(parts[:-1]) + f" and {parts[-1]}"
    return f"assumes {subject}: {listed}; {NO_ARRIVALS}"


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
        if left[other.name].basis is Basis.UNKNOWN and not set(other.demand).isdisjoint(job.demand)
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


def _held_by_budget(job: Job, now: datetime) -> str:
    """A job its team's hold budget holds at the replay's end starts only when the budget allows:
    the replay raises no budget and resets no month, so it is told both ways out."""
    return (
        f"when team {budget_team(job)}'s hold budget allows it: after the budget resets on "
        f"{next_month_start(now):%Y-%m-%d %H:%M} UTC, or when the budget is raised"
    )


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
