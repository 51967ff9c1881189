"""Estimated starts: the queue replayed forward from a snapshot with the real `decide`."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from smq_lambda.domain.config.teams import PreemptionRules, Quota, Teams
from smq_lambda.domain.jobs.model import Attempt, Job, attempt_name
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.forecast.durations import Basis
from smq_lambda.forecast.estimate import assumes, estimate_starts, remaining
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot, UnpooledPolicy

from tests.scheduling.builders import NOW, P5, T0

HOUR = 3600
CONFIG = SchedulerConfig(pools={P5: 1})


def job(
    name: str,
    *,
    priority: int = 0,
    state: JobState = JobState.PENDING,
    instances: int = 1,
    pool: str = P5,
    tagged_s: int | None = None,
    max_runtime_s: int | None = None,
    started_ago_s: float | None = None,
    trained_s: list[float] = (),  # type: ignore[assignment]
    submitted_at: datetime | None = None,
    not_before: datetime | None = None,
) -> Job:
    """A job; `started_ago_s` opens its current attempt that long before NOW (live states), and
    `trained_s` are earlier attempts that trained that long and were preempted."""
    attempts = []
    for number, seconds in enumerate(trained_s, start=1):
        started = T0 + timedelta(seconds=number * 10_000)
        attempts.append(
            Attempt(
                number=number,
                training_job_name=attempt_name(name, "abcdef01", number),
                started_at=started,
                ended_at=started + timedelta(seconds=seconds),
                outcome=AttemptOutcome.PREEMPTED,
            )
        )
    if started_ago_s is not None:
        number = len(attempts) + 1
        attempts.append(
            Attempt(
                number=number,
                training_job_name=attempt_name(name, "abcdef01", number),
                started_at=NOW - timedelta(seconds=started_ago_s),
            )
        )
    return Job(
        name=name,
        job_id="abcdef01",
        state=state,
        priority=priority,
        submitted_at=submitted_at or T0,
        demand={pool: instances},
        owner="arn:aws:iam::123456789012:user/alice",
        attempts=tuple(attempts),
        expected_duration_s=tagged_s,
        max_runtime_s=max_runtime_s,
        not_before=not_before,
        updated_at=NOW,
    )


def running(name: str, **fields: object) -> Job:
    return job(name, state=JobState.RUNNING, **fields)  # type: ignore[arg-type]


def later(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def starts_in(estimates: dict, name: str) -> float | None:  # type: ignore[type-arg]
    at = estimates[name].at
    return None if at is None else (at - NOW).total_seconds()


CASES = [
    pytest.param([], {}, id="empty queue: nothing to estimate"),
    pytest.param([job("a", tagged_s=HOUR)], {"a": 0.0}, id="empty pool: starts now"),
    pytest.param(
        [running("r", tagged_s=2 * HOUR, started_ago_s=1800), job("a", tagged_s=HOUR)],
        {"a": 1.5 * HOUR},
        id="behind a tagged running job: its remaining duration",
    ),
    pytest.param(
        [running("r", max_runtime_s=3 * HOUR, started_ago_s=HOUR), job("a")],
        {"a": 2 * HOUR},
        id="no tag: max runtime less the time it ran",
    ),
    pytest.param(
        [
            running("r", priority=9, tagged_s=HOUR, started_ago_s=0),
            job("low", tagged_s=HOUR, submitted_at=later(0)),
            job("high", priority=5, tagged_s=2 * HOUR, submitted_at=later(5)),
        ],
        {"high": HOUR, "low": 3 * HOUR},
        id="priority order: the higher job first, though submitted later",
    ),
    pytest.param(
        [job("first", tagged_s=HOUR, submitted_at=later(0)), job("second", tagged_s=HOUR, submitted_at=later(1))],
        {"first": 0.0, "second": HOUR},
        id="equal priority: submission order",
    ),
    pytest.param(
        [job("huge", instances=2, tagged_s=HOUR), job("small", tagged_s=HOUR, submitted_at=later(1))],
        {"huge": None, "small": 0.0},
        id="larger than its pool: never, and it blocks nothing",
    ),
    pytest.param(
        [job("resumed", tagged_s=3 * HOUR, trained_s=[HOUR, 1800]), job("next", submitted_at=later(1))],
        {"resumed": 0.0, "next": 1.5 * HOUR},
        id="a preempted job resumes: its trained time is not repeated",
    ),
    pytest.param(
        [running("mystery", started_ago_s=60), job("a", tagged_s=HOUR)],
        {"a": None},
        id="behind a job of unknown duration: unknown",
    ),
    pytest.param(
        [running("r", tagged_s=10 * 24 * HOUR, started_ago_s=0), job("a", tagged_s=HOUR)],
        {"a": None},
        id="beyond the horizon: unknown",
    ),
    pytest.param(
        [job("a", tagged_s=HOUR, not_before=NOW + timedelta(minutes=10))],
        {"a": 600.0},
        id="in start backoff: when it ends",
    ),
    pytest.param(
        [running("r", tagged_s=HOUR, started_ago_s=2 * HOUR), job("a")],
        {"a": 60.0},
        id="an overrunning job still runs a minute",
    ),
    pytest.param(
        [job("p", state=JobState.PREEMPTING, tagged_s=HOUR, started_ago_s=600), job("high", priority=9)],
        {"high": 60.0},
        id="a stop in flight lands a minute after it was sent",
    ),
    pytest.param(
        [job("c", state=JobState.STOPPING, started_ago_s=600), job("a", tagged_s=HOUR)],
        {"a": 60.0},
        id="a cancel in flight frees the pool",
    ),
    pytest.param(
        [running("low", tagged_s=5 * HOUR, started_ago_s=0), job("high", priority=9, tagged_s=HOUR)],
        {"high": 60.0},
        id="a higher job preempts: it starts when the stop lands",
    ),
]


@pytest.mark.parametrize(("jobs", "expected"), CASES)
def test_estimated_starts(jobs: list[Job], expected: dict[str, float | None]) -> None:
    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, CONFIG)

    assert {name: starts_in(estimates, name) for name in estimates} == expected
    for name, estimate in estimates.items():
        assert estimate.job_name == name
        assert estimate.assumed


def test_the_sentence_names_what_it_assumed() -> None:
    jobs = [
        *(running(f"t{n}", tagged_s=HOUR, started_ago_s=0, instances=1) for n in range(3)),
        *(running(f"m{n}", max_runtime_s=HOUR, started_ago_s=0) for n in range(2)),
        job("a", instances=5, tagged_s=HOUR),
    ]
    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, SchedulerConfig(pools={P5: 5}))

    assert starts_in(estimates, "a") == HOUR
    assert estimates["a"].assumed == (
        "assumes 5 jobs ahead run: 3 as tagged (smq:expected-duration) and 2 for their MaxRuntimeInSeconds "
        "(an upper bound); no new higher-priority jobs"
    )


@pytest.mark.parametrize(
    ("sources", "sentence"),
    [
        ({}, "no job ahead has to finish first; assumes no new higher-priority jobs"),
        ({Basis.TAG: 1}, "assumes 1 job ahead runs as tagged (smq:expected-duration); no new higher-priority jobs"),
        (
            {Basis.MAX_RUNTIME: 1},
            "assumes 1 job ahead runs for its MaxRuntimeInSeconds (an upper bound); no new higher-priority jobs",
        ),
        (
            {Basis.MAX_RUNTIME: 2},
            "assumes 2 jobs ahead run for their MaxRuntimeInSeconds (an upper bound); no new higher-priority jobs",
        ),
    ],
)
def test_assumes(sources: dict[Basis, int], sentence: str) -> None:
    assert assumes(sources) == sentence


def test_max_runtime_is_called_an_upper_bound() -> None:
    jobs = [running("r", max_runtime_s=3 * HOUR, started_ago_s=HOUR), job("a")]

    (estimate,) = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, CONFIG).values()

    assert "MaxRuntimeInSeconds (an upper bound)" in estimate.assumed


def test_unknown_names_the_job_it_waits_for() -> None:
    jobs = [running("mystery", started_ago_s=60), job("a", tagged_s=HOUR)]

    (estimate,) = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, CONFIG).values()

    assert estimate.at is None
    assert estimate.assumed == (
        "unknown: it waits for mystery, whose duration is unknown (no smq:expected-duration tag, no MaxRuntimeInSeconds)"
    )


def test_a_job_beside_one_of_unknown_duration_is_still_estimated() -> None:
    jobs = [running("mystery", started_ago_s=60), running("r", tagged_s=HOUR, started_ago_s=0), job("a")]

    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, SchedulerConfig(pools={P5: 2}))

    assert starts_in(estimates, "a") == HOUR


def test_too_large_says_so() -> None:
    (estimate,) = estimate_starts(Snapshot(jobs=(job("huge", instances=4),)), NOW, CONFIG).values()

    assert estimate.at is None
    assert "needs 4 instances of ml.p5.48xlarge, which has 1" in estimate.assumed


def test_beyond_the_horizon_says_so() -> None:
    jobs = [running("r", tagged_s=2 * HOUR, started_ago_s=0), job("a")]

    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, CONFIG, horizon=timedelta(hours=1))

    assert estimates["a"].at is None
    assert estimates["a"].assumed.startswith("not within 1 hour of replay")


def test_instances_used_outside_the_queue_stay_busy() -> None:
    snapshot = Snapshot(jobs=(job("a", tagged_s=HOUR),), external_usage={P5: 1})

    (estimate,) = estimate_starts(snapshot, NOW, SchedulerConfig(pools={P5: 2})).values()

    assert estimate.at == NOW
    assert estimate.assumed.endswith("; the instance used outside the queue stays busy")


def test_an_unpooled_type_under_unlimited_starts_now() -> None:
    config = SchedulerConfig(pools={P5: 1}, unpooled=UnpooledPolicy.UNLIMITED)
    jobs = [running("r", pool="ml.c5.xlarge", started_ago_s=0), job("a", pool="ml.c5.xlarge", tagged_s=HOUR)]

    assert starts_in(estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, config), "a") == 0.0


def test_backfill_starts_a_small_job_beside_a_waiting_head() -> None:
    config = SchedulerConfig(pools={P5: 2}, backfill=True)
    jobs = [
        running("r", tagged_s=HOUR, started_ago_s=0),
        job("head", instances=2, tagged_s=HOUR, submitted_at=later(0)),
        job("small", tagged_s=600, submitted_at=later(1)),
    ]

    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, config)

    assert starts_in(estimates, "small") == 0.0
    assert starts_in(estimates, "head") == HOUR


@pytest.mark.parametrize(
    ("candidate", "seconds", "basis"),
    [
        (running("r", tagged_s=2 * HOUR, started_ago_s=1800), 1.5 * HOUR, Basis.TAG),
        (job("p", tagged_s=3 * HOUR, trained_s=[HOUR, 1800]), 1.5 * HOUR, Basis.TAG),
        (running("p", tagged_s=3 * HOUR, trained_s=[HOUR], started_ago_s=1800), 1.5 * HOUR, Basis.TAG),
        (job("both", tagged_s=600, max_runtime_s=HOUR), 600, Basis.TAG),
        (job("neither"), float("inf"), Basis.UNKNOWN),
        (running("nearly done", tagged_s=20, started_ago_s=19), 2, Basis.TAG),
    ],
)
def test_remaining(candidate: Job, seconds: float, basis: Basis) -> None:
    left = remaining(candidate, NOW)

    assert (left.low_s, left.likely_s, left.high_s, left.basis) == (seconds, seconds, seconds, basis)


@pytest.mark.parametrize(
    ("candidate", "seconds"),
    [
        (running("m", max_runtime_s=HOUR, started_ago_s=1800), 1800),
        (job("m", max_runtime_s=HOUR, trained_s=[1800]), HOUR),
    ],
)
def test_a_max_runtime_remains_at_most_what_the_attempt_has_left(candidate: Job, seconds: float) -> None:
    left = remaining(candidate, NOW)

    assert (left.low_s, left.likely_s, left.high_s, left.basis) == (0, seconds, seconds, Basis.MAX_RUNTIME)


@pytest.mark.parametrize(
    ("candidate", "seconds"),
    [
        (running("over", tagged_s=60, max_runtime_s=4 * HOUR, started_ago_s=HOUR), (6, 6, 3 * HOUR)),
        (running("long over", tagged_s=2 * HOUR, max_runtime_s=4 * HOUR, started_ago_s=3 * HOUR), (60, 60, HOUR)),
        (running("over, no max", tagged_s=60, started_ago_s=HOUR), (6, 6, math.inf)),
    ],
)
def test_a_job_that_overran_its_tag_runs_a_tenth_of_it_more_at_most_a_minute_and_at_worst_to_its_max_runtime(
    candidate: Job, seconds: tuple[float, float, float]
) -> None:
    left = remaining(candidate, NOW)

    assert (left.low_s, left.likely_s, left.high_s) == seconds


def test_bounded_a_thousand_pending_jobs_stop_at_max_jobs() -> None:
    jobs = [
        job(f"job-{n:04d}", priority=n % 3, tagged_s=600 + n, submitted_at=later(n), instances=1 + n % 2)
        for n in range(1000)
    ]
    config = SchedulerConfig(pools={P5: 4})
    started = time.perf_counter()

    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, config, max_jobs=200)

    elapsed = time.perf_counter() - started
    first = sorted(jobs, key=lambda each: each.order)[:200]
    assert set(estimates) == {each.name for each in first}
    assert all(estimate.at is not None for estimate in estimates.values())
    assert elapsed < 10, f"took {elapsed:.1f}s"


def test_bounded_by_events() -> None:
    jobs = [job(f"job-{n:03d}", tagged_s=60, submitted_at=later(n)) for n in range(50)]

    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, CONFIG, max_events=20)

    unknown = [estimate for estimate in estimates.values() if estimate.at is None]
    assert unknown
    assert all("bound on events" in estimate.assumed for estimate in unknown)


def test_the_snapshot_is_not_changed() -> None:
    jobs = (running("r", tagged_s=HOUR, started_ago_s=0), job("a", tagged_s=HOUR))
    snapshot = Snapshot(jobs=jobs)

    estimate_starts(snapshot, NOW, CONFIG)

    assert snapshot.jobs == jobs
    assert snapshot.jobs[1] == replace(jobs[1])


def test_a_minimum_runtime_delays_the_preemption_to_when_it_ends() -> None:
    config = SchedulerConfig(pools={P5: 1}, preemption=PreemptionRules(min_runtime_s=600))
    jobs = [running("low", tagged_s=5 * HOUR, started_ago_s=100), job("high", priority=9, tagged_s=HOUR)]

    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, config)

    assert starts_in(estimates, "high") == 500 + 60


def test_team_quotas_are_replayed_with_the_real_pass() -> None:
    teams = Teams(quotas={"nlp": Quota({P5: 1}), "vision": Quota({P5: 1})})
    config = SchedulerConfig(pools={P5: 2}, teams=teams)
    jobs = [
        replace(running("nlp-1", tagged_s=HOUR, started_ago_s=0), team="nlp"),
        replace(job("nlp-2", tagged_s=HOUR, submitted_at=later(0)), team="nlp"),
        replace(job("vision-1", tagged_s=HOUR, submitted_at=later(1)), team="vision"),
    ]

    estimates = estimate_starts(Snapshot(jobs=tuple(jobs)), NOW, config)

    assert starts_in(estimates, "vision-1") == 0.0
    assert starts_in(estimates, "nlp-2") == HOUR
