"""Warm pools in simulation: the keep-alives the queue decides against those sent as asked, and the
target of issue 20.

Run: .venv/bin/python bench/bench_warm_pools.py [--seeds 7 11] [--jobs 160] [--json FILE]
(`make bench-warm-pools` writes .bench/warm_pools.json)

For each seed, the generated `warm-pools` workload (one pool of 8 × ml.g5.12xlarge, sweeps of
consecutive jobs of six families, a warm key each, every job asking for a 30-minute keep-alive) is
replayed by smq with backfill on twice in the same run, with the same start-up draws: with the
`warm_pools` section (the queue keeps a job's instances warm only while a matching job waits, at
most 30 minutes) and without it (every keep-alive sent as asked). Both reuse warm pools. The
target, with the section: idle warm-pool hours at most 5% of reused hours (simulation/warm_pools.py
defines both). Without the section the same ratio is printed beside it, and the start-up the
reuses saved in each run.

Exits 1, naming the target missed, when it is.
"""

from __future__ import annotations

import time
from typing import Any

from seeded_targets import print_verdicts, run_seeds
from smq.simulate.placement_workloads import warm_pools
from smq.simulate.report import metrics_table
from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.engine import Result, Timing, simulate

IDLE_TO_REUSED = 0.05


def case(seed: int, jobs: int) -> dict[str, Any]:
    workload = warm_pools(seed, jobs)
    assert workload.document is not None
    with_section = SchedulerConfig.of(parse_config_document(workload.document, source="warm-pools"), backfill=True)
    started = time.perf_counter()
    runs: dict[str, Result] = {
        "keep-alive as asked": simulate(
            workload.jobs, SchedulerConfig(pools=workload.pools, backfill=True), timing=Timing(seed=seed)
        ),
        "warm_pools section": simulate(workload.jobs, with_section, timing=Timing(seed=seed)),
    }
    elapsed = time.perf_counter() - started
    print(f"\n## warm-pools, seed {seed}: {len(workload.jobs)} jobs, pools {workload.pools} ({elapsed:.1f} s)\n")
    print(metrics_table({name: run.metrics for name, run in runs.items()}))
    warm = {name: run.metrics["warm_pools"] for name, run in runs.items()}
    print()
    for name, figures in warm.items():
        print(
            f"{name}: {figures['reused']} of {figures['retained']} warm pools reused, idle "
            f"{figures['idle_hours']:.2f} h, reused {figures['reused_hours']:.2f} h (idle / reused "
            f"{figures['idle_to_reused']}), start-up saved {figures['startup_saved_s'] / 3600:.2f} h"
        )
    ratio = warm["warm_pools section"]["idle_to_reused"]
    met = {
        f"idle warm-pool hours / reused hours <= {IDLE_TO_REUSED}": {
            "value": ratio,
            "met": ratio is not None and ratio <= IDLE_TO_REUSED,
        }
    }
    print_verdicts(met)
    return {
        "warm_pools": warm,
        "makespan_s": {name: run.metrics["makespan_s"] for name, run in runs.items()},
        "pools": {name: run.metrics["pools"] for name, run in runs.items()},
        "targets": met,
        "elapsed_s": round(elapsed, 1),
    }


def main() -> int:
    return run_seeds("bench-warm-pools", __doc__.splitlines()[0], case, jobs=160)


if __name__ == "__main__":
    raise SystemExit(main())
