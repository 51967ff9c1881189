"""The cost of one decide() pass: snapshots of 10, 100, 1000 and 5000 active jobs, timed against a
baseline taken in the same run (sorting the pending jobs into queue order, the least any pass must do).

Run: .venv/bin/python bench/bench_scheduler.py [--seed 7]

What the decisions are worth (waits, utilization, inversions against baselines) is measured by
bench/bench_simulate.py.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial

from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from tabulate import tabulate

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
TIMING_POOLS = {"ml.p5.48xlarge": 64, "ml.p4d.24xlarge": 64, "ml.g5.xlarge": 256, "ml.trn1.32xlarge": 64}


def synthetic_snapshot(active: int, seed: int) -> Snapshot:
    """`active` jobs: live ones filling the pools (a few already being stopped), the rest pending."""
    rng = random.Random(seed)
    pools = list(TIMING_POOLS)
    used = dict.fromkeys(pools, 0)
    jobs = []
    for number in range(active):
        pool = rng.choice(pools)
        demand = {pool: rng.choice((1, 1, 2, 4, 8))}
        if rng.random() < 0.05:
            other = rng.choice(pools)
            demand[other] = demand.get(other, 0) + 1
        submitted = EPOCH + timedelta(seconds=number)
        live = number % 5 == 0 and all(used[name] + count <= TIMING_POOLS[name] for name, count in demand.items())
        state = JobState.PENDING
        attempts: tuple[Attempt, ...] = ()
        if live:
            for name, count in demand.items():
                used[name] += count
            state = JobState.PREEMPTING if rng.random() < 0.05 else JobState.RUNNING
            attempts = (Attempt(1, f"job-{number}-1", submitted + timedelta(minutes=1), backfill=rng.random() < 0.1),)
        jobs.append(
            Job(
                name=f"job-{number:05d}",
                job_id=f"{number:08x}",
                state=state,
                priority=rng.randint(0, 9),
                submitted_at=submitted,
                demand=demand,
                owner="bench",
                attempts=attempts,
            )
        )
    return Snapshot(jobs=tuple(jobs))


def _per_call(function: Callable[[], object], budget: float = 1.0) -> float:
    """Least CPU seconds of one call over repeats filling about `budget` seconds of wall time.

    CPU time of this process (not wall time), so other processes sharing the cores do not inflate
    it; the least of the repeats is the run least disturbed by cache pollution and interrupts.
    """
    samples: list[float] = []
    deadline = time.perf_counter() + budget
    while len(samples) < 5 or time.perf_counter() < deadline:
        started = time.process_time()
        function()
        samples.append(time.process_time() - started)
    return min(samples)


def _sort_pending(snapshot: Snapshot) -> list[Job]:
    """The baseline: the pending jobs in queue order, the least any pass must do."""
    return sorted((job for job in snapshot.jobs if job.state is JobState.PENDING), key=lambda job: job.order)


def time_passes(sizes: list[int], seed: int) -> None:
    now = EPOCH + timedelta(days=1)
    rows = []
    for backfill in (False, True):
        config = SchedulerConfig(pools=TIMING_POOLS, backfill=backfill)
        for size in sizes:
            snapshot = synthetic_snapshot(size, seed)
            pending = sum(job.state is JobState.PENDING for job in snapshot.jobs)

            base = _per_call(partial(_sort_pending, snapshot))
            actual = _per_call(partial(decide, snapshot, now, config))
            rows.append(
                [
                    "on" if backfill else "off",
                    size,
                    pending,
                    f"{base * 1e3:.3f}",
                    f"{actual * 1e3:.3f}",
                    f"{actual / base:.1f}",
                ]
            )
    headers = ["backfill", "active jobs", "pending", "baseline sort (CPU ms)", "decide (CPU ms)", "decide / baseline"]
    print(tabulate(rows, headers=headers, tablefmt="github"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print("## One decide() pass\n")
    time_passes([10, 100, 1000, 5000], args.seed)


if __name__ == "__main__":
    main()
