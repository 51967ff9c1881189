"""Scheduler benchmark: backfill off against on in simulation, and the cost of one decide() pass.

Run: .venv/bin/python bench/bench_scheduler.py [--jobs 300] [--seed 7]   (the simulator module sits
beside this script, so running the script puts it on the path)

Part 1 drives decide() through bench/scheduler_simulation.py over one seeded workload, once with
backfill off and once on, and prints waits per priority class, accelerator utilization, idle
instance-hours while jobs were pending, preemption stops, and the on/off ratios.

Part 2 times one pass over snapshots of 10, 100, 1000 and 5000 active jobs against a baseline taken
in the same run (sorting the pending jobs into queue order, the least any pass must do).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial

from scheduler_simulation import EPOCH, HOUR, Result, Workload, simulate
from smq_lambda.domain.model import Attempt, Job
from smq_lambda.domain.states import JobState
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from tabulate import tabulate

TIMING_POOLS = {"ml.p5.48xlarge": 64, "ml.p4d.24xlarge": 64, "ml.g5.xlarge": 256, "ml.trn1.32xlarge": 64}


def compare_backfill(workload: Workload, start_delay: float, stop_delay: float) -> None:
    submissions = workload.generate()
    results: dict[str, Result] = {}
    for label, backfill in (("off", False), ("on", True)):
        started = time.perf_counter()
        config = SchedulerConfig(pools=workload.pools, backfill=backfill)
        results[label] = simulate(submissions, config, start_delay=start_delay, stop_delay=stop_delay)
        print(f"backfill {label}: {results[label].passes} passes in {time.perf_counter() - started:.1f} s")
    off, on = results["off"], results["on"]
    rows = []
    for priority in sorted(workload.priorities, reverse=True):
        rows.append(_row(f"mean wait p{priority} (h)", off.mean_wait(priority) / HOUR, on.mean_wait(priority) / HOUR))
        rows.append(_row(f"max wait p{priority} (h)", off.max_wait(priority) / HOUR, on.max_wait(priority) / HOUR))
    rows += [
        _row("utilization (busy / capacity inst-h)", off.utilization, on.utilization, digits=3),
        _row(
            "idle inst-h while jobs pending",
            off.idle_while_pending_seconds / HOUR,
            on.idle_while_pending_seconds / HOUR,
        ),
        _row("preemption stops", off.preemptions, on.preemptions, digits=0),
        _row("stops that reclaimed backfilled jobs", off.reclaim_stops, on.reclaim_stops, digits=0),
        _row("backfill starts", off.backfill_starts, on.backfill_starts, digits=0),
        _row("makespan (h)", off.makespan / HOUR, on.makespan / HOUR),
    ]
    print(tabulate(rows, headers=["metric", "backfill off", "backfill on", "on / off"], tablefmt="github"))
    if on.reclaim_delays:
        delays = sorted(on.reclaim_delays)
        within = sum(delay <= stop_delay for delay in delays)
        print(
            f"heads reclaiming backfilled instances: {len(delays)}; started within one stop ({stop_delay:.0f} s): "
            f"{within}; median {statistics.median(delays):.0f} s, max {delays[-1]:.0f} s"
        )
    print(f"unfinished jobs: off {len(off.unfinished)}, on {len(on.unfinished)}")


def _row(metric: str, off: float, on: float, digits: int = 1) -> list[str]:
    ratio = f"{on / off:.2f}" if off else "-"
    return [metric, f"{off:.{digits}f}", f"{on:.{digits}f}", ratio]


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
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--start-delay", type=float, default=300.0, help="seconds from StartJob to training")
    parser.add_argument("--stop-delay", type=float, default=120.0, help="seconds from PreemptJob to Stopped")
    args = parser.parse_args()
    workload = Workload(seed=args.seed, jobs=args.jobs, load=args.load)
    print(
        f"## Simulation: {args.jobs} jobs, seed {args.seed}, pools {dict(workload.pools)}, load {args.load}, "
        f"start {args.start_delay:.0f} s, stop {args.stop_delay:.0f} s\n"
    )
    compare_backfill(workload, args.start_delay, args.stop_delay)
    print("\n## One decide() pass\n")
    time_passes([10, 100, 1000, 5000], args.seed)


if __name__ == "__main__":
    main()
