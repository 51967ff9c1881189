"""Start estimates under a deadline (`estimate_starts(time_left=...)`): out of time they degrade,
in order, rather than run over: a point instead of a band, then fewer jobs, then none."""

from __future__ import annotations

from collections.abc import Callable

from smq_lambda.forecast.estimate import UNBANDED, estimate_starts
from smq_lambda.forecast.start_estimate import EstimateKind
from smq_lambda.scheduling.snapshot import Snapshot

from tests.forecast.test_band import CONFIG, FAMILY, offsets
from tests.scheduling.builders import NOW
from tests.simulate.test_estimate import job, later, running

QUEUE = Snapshot(
    jobs=(
        running("train-1", started_ago_s=0),
        job("train-2", submitted_at=later(0)),
        job("last", tagged_s=60, submitted_at=later(1)),
    )
)
"""One running job of a learned family, two behind it: `train-2` starts at its end, `last` after."""


def ticks(allowed: int) -> Callable[[], float]:
    """A deadline that has time for `allowed` checks, then none."""
    calls = iter(range(allowed, -1, -1))
    return lambda: float(next(calls, 0))


def checks_made(queue: Snapshot) -> int:
    """How often an estimate with all the time it needs asks the deadline."""
    count = 0

    def left() -> float:
        nonlocal count
        count += 1
        return 1.0

    estimate_starts(queue, NOW, CONFIG, FAMILY, time_left=left)
    return count


def test_with_time_enough_the_estimates_are_those_without_a_deadline() -> None:
    assert estimate_starts(QUEUE, NOW, CONFIG, FAMILY, time_left=lambda: 60.0) == estimate_starts(
        QUEUE, NOW, CONFIG, FAMILY
    )


def test_with_no_time_left_no_job_is_estimated() -> None:
    assert estimate_starts(QUEUE, NOW, CONFIG, FAMILY, time_left=lambda: 0.0) == {}


def test_out_of_time_after_the_likely_replay_each_estimate_is_a_point_at_its_likely_start() -> None:
    estimates = estimate_starts(QUEUE, NOW, CONFIG, FAMILY, time_left=ticks(checks_made(QUEUE) - 1))

    assert offsets(estimates["train-2"]) == (1000, 1000, 1000)
    assert offsets(estimates["last"]) == (2000, 2000, 2000)
    assert {estimate.kind for estimate in estimates.values()} == {EstimateKind.POINT}
    assert all(estimate.assumed.endswith(UNBANDED) for estimate in estimates.values())


def test_out_of_time_within_the_likely_replay_the_jobs_it_had_not_started_get_no_estimate() -> None:
    """The least time that gives any estimate gives the first job's: the replay reached its start."""
    first = next(
        estimates
        for allowed in range(checks_made(QUEUE))
        if (estimates := estimate_starts(QUEUE, NOW, CONFIG, FAMILY, time_left=ticks(allowed)))
    )

    assert set(first) == {"train-2"}
    assert offsets(first["train-2"]) == (1000, 1000, 1000)
