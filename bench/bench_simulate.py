"""smq against its baselines in simulation, and the targets of the "smq simulate" issue.

Run: .venv/bin/python bench/bench_simulate.py [--seeds 7 11] [--jobs 300] [--json FILE]
(`make bench-simulate` writes .bench/simulate.json)

For each seed, the generated `mixed` workload (bursty, four priorities, three teams, two pools) is
replayed by the real scheduling code with backfill on and off, and by the `fifo` and `seed`
baselines, all in the same run; the table prints each against smq with backfill on. Then the
targets, checked on smq with backfill on:

1. utilization while waiting at least 0.99 in every pool;
2. no priority inversion lasting beyond one pass (passes run at the events' moment here, so the
   longest inversion must be 0 s);
3. p95 wait of the top priority class at most a tenth of fifo's;
4. work lost to a preemption at most one checkpoint interval of the preempted job, every time.

Then, per seed, the `teams` workload (two teams, bursty, one pool of 8 with quotas of 4 each)
with its quotas and without them (the same document less "quotas", measured against the same
quotas), with the per-team figures and the ratio of each no-quota figure to the one with quotas;
its targets, with quotas: quota kept at least 0.99 for every team, and both teams borrowed and
lent idle quota.

Last, the spot workload (fallback to on-demand against none) and the Kueue-shaped load (no start
delay: its jobs last a second) under smq, for reference.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from seeded_targets import print_verdicts
from smq.simulate.report import metrics_table, team_table
from smq.simulate.workloads import Workload, kueue, mixed, spot, teams
from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.engine import Result, Timing, simulate
from smq_lambda.simulation.policies import PolicyName

TOP_PRIORITY = "3"


def compare(jobs: list[TraceJob], pools: dict[str, int], timing: Timing) -> dict[str, Result]:
    runs = {
        "smq": (PolicyName.SMQ, True),
        "smq, backfill off": (PolicyName.SMQ, False),
        "fifo": (PolicyName.FIFO, False),
        "seed": (PolicyName.SEED, False),
    }
    return {
        label: simulate(jobs, SchedulerConfig(pools=pools, backfill=backfill), name, timing)
        for label, (name, backfill) in runs.items()
    }


def targets(jobs: list[TraceJob], results: dict[str, Result]) -> dict[str, dict[str, Any]]:
    smq, fifo = results["smq"], results["fifo"]
    while_waiting = min(pool["utilization_while_waiting"] for pool in smq.metrics["pools"].values())
    top, top_fifo = smq.metrics["wait_s"][TOP_PRIORITY]["p95"], fifo.metrics["wait_s"][TOP_PRIORITY]["p95"]
    intervals = {job.name: job.checkpoint_every_s or job.duration_s for job in jobs}
    lost = [
        segment.lost_work_s / intervals[segment.job]
        for segment in smq.segments
        if segment.outcome == "preempted" and not segment.interruptions
    ]
    return {
        "utilization while waiting >= 0.99 in every pool": {"value": while_waiting, "met": while_waiting >= 0.99},
        "longest inversion <= one pass (0 s)": {
            "value": smq.metrics["inversion_max_s"],
            "met": smq.metrics["inversion_max_s"] <= 0.0,
        },
        "p95 wait of priority 3 <= fifo's / 10": {
            "value": round(top / top_fifo, 4) if top_fifo else 0.0,
            "met": top <= top_fifo / 10,
        },
        "work lost per preemption <= one checkpoint interval": {
            "value": round(max(lost, default=0.0), 4),
            "met": max(lost, default=0.0) <= 1.0,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 11])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    report: dict[str, Any] = {"mixed": {}}
    for seed in args.seeds:
        workload = mixed(seed, args.jobs)
        started = time.perf_counter()
        results = compare(workload.jobs, workload.pools, Timing(seed=seed))
        elapsed = time.perf_counter() - started
        print(f"\n## mixed workload, seed {seed}: {args.jobs} jobs, pools {workload.pools} ({elapsed:.1f} s)\n")
        print(metrics_table({label: result.metrics for label, result in results.items()}))
        met = targets(workload.jobs, results)
        print()
        print_verdicts(met)
        report["mixed"][str(seed)] = {
            "metrics": {label: result.metrics for label, result in results.items()},
            "targets": met,
        }
    report["teams"] = {str(seed): teams_case(teams(seed), Timing(seed=seed), seed) for seed in args.seeds}
    report["spot"] = reference("spot workload, seed 7", spot(7), Timing(seed=7), compare_policies=True)
    report["kueue"] = reference("Kueue-shaped load, 3 pools, no start delay", kueue(0), Timing(0, 0))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def teams_case(workload: Workload, timing: Timing, seed: int) -> dict[str, Any]:
    document = parse_config_document(workload.config, source="teams")
    quotas = SchedulerConfig(pools=document.pools, teams=document.teams, preemption=document.preemption)
    plain = parse_config_document({"pools": workload.pools}, source="teams without quotas")
    without = SchedulerConfig(pools=plain.pools, preemption=plain.preemption)
    results = {
        "smq, quotas": simulate(workload.jobs, quotas, PolicyName.SMQ, timing),
        "smq, no quotas": simulate(workload.jobs, without, PolicyName.SMQ, timing, teams=document.teams),
    }
    metrics = {label: result.metrics for label, result in results.items()}
    print(f"\n## Two teams, bursty load, seed {seed}: {len(workload.jobs)} jobs, pools {workload.pools}\n")
    print(metrics_table(metrics))
    print()
    print(team_table(metrics))
    with_quotas, baseline = metrics["smq, quotas"]["teams"], metrics["smq, no quotas"]["teams"]
    ratios = {}
    print()
    for team, figures in with_quotas.items():
        pool = next(iter(figures["pools"]))
        ratios[team] = {
            "wait p50": _ratio(baseline[team]["wait_s"]["p50"], figures["wait_s"]["p50"]),
            "wait p95": _ratio(baseline[team]["wait_s"]["p95"], figures["wait_s"]["p95"]),
            "quota kept": _ratio(baseline[team]["pools"][pool]["quota_kept"], figures["pools"][pool]["quota_kept"]),
        }
        print(f"- {team}, no quotas / quotas: " + ", ".join(f"{key} {value}" for key, value in ratios[team].items()))
    kept = min(figures["pools"][pool]["quota_kept"] for figures in with_quotas.values() for pool in figures["pools"])
    shared = min(
        min(shares["borrowed_instance_s"], shares["lent_instance_s"])
        for figures in with_quotas.values()
        for shares in figures["pools"].values()
    )
    met = {
        "quota kept >= 0.99 for every team": {"value": kept, "met": kept >= 0.99},
        "every team borrowed and lent (instance-s, least)": {"value": shared, "met": shared > 0},
    }
    print_verdicts(met)
    return {"metrics": metrics, "no_quotas_over_quotas": ratios, "targets": met}


def _ratio(value: float, base: float) -> float | None:
    return round(value / base, 3) if base else None


def reference(title: str, workload: Any, timing: Timing, *, compare_policies: bool = False) -> dict[str, Any]:
    names = list(PolicyName) if compare_policies else [PolicyName.SMQ]
    config = SchedulerConfig(pools=workload.pools, backfill=True)
    metrics = {str(name): simulate(workload.jobs, config, name, timing).metrics for name in names}
    print(f"\n## {title}: {len(workload.jobs)} jobs, backfill on\n")
    print(metrics_table(metrics))
    return metrics


if __name__ == "__main__":
    raise SystemExit(main())
