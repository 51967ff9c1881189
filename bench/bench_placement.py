"""Placement in simulation: flexible jobs against the same jobs pinned, and the targets of issue 20.

Run: .venv/bin/python bench/bench_placement.py [--seeds 7 11] [--jobs 200] [--json FILE]
(`make bench-placement` writes .bench/placement.json)

For each seed, the generated `two-types` workload (a fast pool of 8 × ml.p5.48xlarge and a slow
one of 16 × ml.g5.48xlarge; a quarter of the jobs fast only, a quarter slow only, half flexible:
n fast instances, else 2n slow ones training 1.5 times as long) is replayed by smq with backfill
on twice in the same run: as generated (flexible), and with every job pinned to its first
preference. The targets:

1. the flexible jobs' p50 wait at most half of the same jobs' p50 wait pinned;
2. utilization while waiting at least 0.99 in both pools, in both runs.

Exits 1, naming each target missed, when one is.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from seeded_targets import print_verdicts, run_seeds
from smq.simulate.placement_workloads import two_types
from smq.simulate.report import metrics_table
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.engine import Result, Timing, simulate
from smq_lambda.simulation.metrics import percentiles

WAIT_RATIO = 0.5
UTILIZATION_WHILE_WAITING = 0.99


def case(seed: int, jobs: int) -> dict[str, Any]:
    workload = two_types(seed, jobs)
    config = SchedulerConfig(pools=workload.pools, backfill=True)
    flexible_names = sorted(job.name for job in workload.jobs if job.alternatives)
    pinned_trace = [replace(job, alternatives=()) for job in workload.jobs]
    started = time.perf_counter()
    runs: dict[str, Result] = {
        "pinned": simulate(pinned_trace, config, timing=Timing(seed=seed)),
        "flexible": simulate(workload.jobs, config, timing=Timing(seed=seed)),
    }
    elapsed = time.perf_counter() - started
    waits = {name: percentiles(run.waits[job] for job in flexible_names) for name, run in runs.items()}
    print(f"\n## two-types, seed {seed}: {len(workload.jobs)} jobs ({len(flexible_names)} flexible), ", end="")
    print(f"pools {workload.pools} ({elapsed:.1f} s)\n")
    print(metrics_table({name: run.metrics for name, run in runs.items()}))
    placement = runs["flexible"].metrics["placement"]
    ratio = round(waits["flexible"]["p50"] / waits["pinned"]["p50"], 3) if waits["pinned"]["p50"] else None
    print(f"\nflexible jobs' wait p50: pinned {waits['pinned']['p50'] / 60:.1f} min, flexible ", end="")
    print(f"{waits['flexible']['p50'] / 60:.1f} min (flexible / pinned {ratio}); ", end="")
    print(f"started at a later preference: {placement['started_elsewhere']}")
    met = targets(ratio, runs)
    print_verdicts(met)
    return {
        "flexible_wait_s": waits,
        "flexible_over_pinned_p50": ratio,
        "started_elsewhere": placement["started_elsewhere"],
        "pools": {name: run.metrics["pools"] for name, run in runs.items()},
        "targets": met,
        "elapsed_s": round(elapsed, 1),
    }


def targets(ratio: float | None, runs: dict[str, Result]) -> dict[str, dict[str, Any]]:
    verdicts = {
        f"flexible jobs' p50 wait, flexible / pinned <= {WAIT_RATIO}": {
            "value": ratio,
            "met": ratio is not None and ratio <= WAIT_RATIO,
        }
    }
    for name, run in runs.items():
        for pool, figures in run.metrics["pools"].items():
            value = figures["utilization_while_waiting"]
            verdicts[f"{name}: utilization while waiting {pool} >= {UTILIZATION_WHILE_WAITING}"] = {
                "value": value,
                "met": value >= UTILIZATION_WHILE_WAITING,
            }
    return verdicts


def main() -> int:
    return run_seeds("bench-placement", __doc__.splitlines()[0], case, jobs=200)


if __name__ == "__main__":
    raise SystemExit(main())
