"""Start estimates measured in simulation: the targets of issue 24 on the generated workloads made
of job families, and the estimates that assume MaxRuntimeInSeconds in the same run.

Run: .venv/bin/python bench/bench_estimates.py [--seeds 7 11] [--json FILE]
(`make bench-estimates` writes .bench/estimates.json)

For each seed, `mixed-families` (300 jobs, four priorities, three teams of four families, two
pools) and `teams-families` (120 jobs, two teams of four families on one pool of 8 with quotas of
4 each) are replayed by smq with backfill on and `estimates=True` (simulation/estimates.py): before
a pass, every pending job's start is estimated by the live code with the durations learned so far
in the run, and again with none (every job ahead at its MaxRuntimeInSeconds, as before learned
durations); each estimate is measured against the start that followed (forecast/accuracy.py).

The targets, on each job's first estimate of each wait (`submission`):

1. at least 0.80 of the jobs start within their band;
2. the median absolute error of the likely start is at most 0.25 of the wait.

Each is checked over every estimate (`all`: a job with room was told "now" and started then) and
over the estimates followed by a wait longer than the band's grace (`waited`: the ones a user reads
as a time). The ratios compare the max-runtime estimates with the learned ones.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from seeded_targets import print_verdicts
from smq.simulate.report import estimate_table
from smq.simulate.workloads import Workload, mixed_families, teams_families
from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.accuracy import ALL, WAITED
from smq_lambda.simulation.engine import Timing, simulate

WITHIN_BAND = 0.80
ERROR_SHARE = 0.25
WORKLOADS = {"mixed-families": mixed_families, "teams-families": teams_families}


def case(name: str, workload: Workload, seed: int) -> dict[str, Any]:
    document = parse_config_document(workload.config, source=name)
    config = SchedulerConfig.of(document, backfill=True)
    started = time.perf_counter()
    result = simulate(workload.jobs, config, timing=Timing(seed=seed), estimates=True)
    elapsed = time.perf_counter() - started
    estimates = result.metrics["estimates"]
    print(f"\n## {name}, seed {seed}: {len(workload.jobs)} jobs, pools {workload.pools} ({elapsed:.0f} s)\n")
    print(estimate_table({"smq": result.metrics}))
    met = targets(estimates)
    print()
    print_verdicts(met)
    compared = ratios(estimates)
    print("- max-runtime / learned, submission: " + ", ".join(f"{key} {value}" for key, value in compared.items()))
    return {
        "estimates": estimates,
        "targets": met,
        "max_runtime_over_learned": compared,
        "wait_s": result.metrics["wait_s"],
        "elapsed_s": round(elapsed, 1),
    }


def targets(estimates: dict[str, Any]) -> dict[str, dict[str, Any]]:
    submission = estimates["learned"]["submission"]
    verdicts = {}
    for group in (ALL, WAITED):
        within, error = submission[group]["within_band"], submission[group]["median_error_share"]
        verdicts[f"{group}: within band >= {WITHIN_BAND}"] = {
            "value": within,
            "met": within is not None and within >= WITHIN_BAND,
        }
        verdicts[f"{group}: median error <= {ERROR_SHARE} of the wait"] = {
            "value": error,
            "met": error is not None and error <= ERROR_SHARE,
        }
    return verdicts


def ratios(estimates: dict[str, Any]) -> dict[str, float | None]:
    learned, ceiling = estimates["learned"]["submission"], estimates["max_runtime"]["submission"]
    return {
        f"{group} {figure}": _ratio(ceiling[group][figure], learned[group][figure])
        for group in (ALL, WAITED)
        for figure in ("within_band", "within_1_min", "within_10_min", "median_error_share", "median_error_s")
    }


def _ratio(value: float | None, base: float | None) -> float | None:
    return round(value / base, 3) if value is not None and base else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 11])
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    report = {
        name: {str(seed): case(name, generate(seed), seed) for seed in args.seeds}
        for name, generate in WORKLOADS.items()
    }
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
