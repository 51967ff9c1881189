"""CPU of one scheduling pass at fleet size, every feature on: the decision, and the start estimates.

Run: .venv/bin/python bench/bench_fleet_pass.py [--json FILE]

The fleet: 20 pools of 100 instances, all held by 2,000 running one-instance jobs of 8 teams (a
quota of 12 in every pool each, lending and borrowing), 10,000 jobs pending behind them (500 per
pool, three priorities); one job in ten flexible (its pool, then the next), one in ten spot (4 pools
have spot pools of 20), one in ten asking for a warm pool; a training plan of one type in a window;
hold budgets for two teams, with prices; backfill on (the default). The pass reads what the
deployed pass reads: every live job and each pool's and each team's queue front
(scheduling/queue_front.py), as service/passes.py sizes them.

Measured with `time.process_time` (CPU, this process), each the best of `--repeats`:
- decide: `decide_pass` over that snapshot (measuring its ledger included);
- estimates: `estimate_starts` over the jobs the pass read (start estimates of the first 200 pending
  jobs, durations from MaxRuntimeInSeconds: no history), given at most ESTIMATE_CAP_S (30 CPU-s):
  one that needs more stops there, as a pass out of time does, and reads "≥";
- the audit's shape (5 pools of 64, 300 running, 200 pending, backfill on): its estimates.
Baseline, in the same run: sorting the pending jobs the pass read into queue order, the least any
pass must do; the figures are printed as ratios to it.

Targets (issue 31), with the Lambda-equivalent at the scheduler's 512 MB (about 0.29 vCPU, so 3.45
times these CPU-seconds): decide ≤ 1 CPU-s (the DynamoDB writes, measured on moto by
bench_pass_cost.py, are not in this figure); estimates ≤ 2 CPU-s; the audit's estimates ≤ 0.5 CPU-s.
Each is printed MET or MISSED with its figure.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_pass_cost import job
from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import Purchase, spot_pool
from smq_lambda.forecast.estimate import estimate_starts
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.decide import decide_pass
from smq_lambda.scheduling.purchase_options import listed_fronts
from smq_lambda.scheduling.queue_front import front_sizes, team_front_sizes
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from tabulate import tabulate

NOW = datetime(2026, 11, 10, 12, tzinfo=UTC)
TYPES = [
    *(f"ml.g5.{size}" for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")),
    *(f"ml.g6.{size}" for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")),
    "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.trn1.32xlarge",
]  # fmt: skip
TEAMS = [f"team-{index}" for index in range(8)]
SPOT_TYPES = TYPES[:4]
PLAN_TYPE = TYPES[-2]
MAX_RUNTIME_S = 4 * 3600
LAMBDA_VCPU = 0.29
"""The scheduler's share of a vCPU at 512 MB: Lambda-equivalent seconds are CPU-seconds / this."""
ESTIMATE_CAP_S = 30.0
"""The most CPU-seconds one estimate is given here; beyond it the figure is a lower bound."""
TARGETS = {"decide": 1.0, "estimates": 2.0, "audit estimates": 0.5}
"""CPU-seconds on this machine (issue 31)."""


def document(pools: Sequence[str], capacity: int, teams: Sequence[str], quota: int) -> dict[str, Any]:
    """The configuration document of a fleet: every feature's section."""
    window = {"start": (NOW - timedelta(hours=1)).isoformat(), "end": (NOW + timedelta(hours=5)).isoformat()}
    plan = {
        "arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/fleet",
        "instance_type": PLAN_TYPE,
        "instances": 16,
        "windows": [window],
        "stop_margin_s": 900,
    }
    spot = [pool for pool in SPOT_TYPES if pool in pools]
    return {
        "pools": dict.fromkeys(pools, capacity),
        "spot": {"pools": dict.fromkeys(spot, 20)} if spot else {},
        "prices": {pool: 5.0 + index for index, pool in enumerate(pools)},
        "quotas": {team: {"instances": dict.fromkeys(pools, quota)} for team in teams},
        "budgets": {team: {"monthly_usd": 10_000_000, "action": "hold"} for team in teams[:2]},
        "training_plans": {"fleet": plan} if PLAN_TYPE in pools else {},
        "warm_pools": {"max_keep_alive_s": 1800},
    }


def config_of(pools: Sequence[str], capacity: int, teams: Sequence[str], quota: int) -> SchedulerConfig:
    parsed = parse_config_document(document(pools, capacity, teams, quota), source="bench")
    return SchedulerConfig.of(parsed, backfill=True)


def new_job(name: str, pool: str, team: str | None, priority: int, submitted_at: datetime) -> Job:
    """bench_pass_cost's job in `pool`, of `team`, with a MaxRuntimeInSeconds of 4 hours."""
    queued = job(name, priority, submitted_at, pool)
    request = {**queued.request, "StoppingCondition": {"MaxRuntimeInSeconds": MAX_RUNTIME_S}}
    return replace(queued, request=request, team=team, max_runtime_s=MAX_RUNTIME_S)


def running_jobs(pools: Sequence[str], per_pool: int, teams: Sequence[str | None]) -> list[Job]:
    jobs = []
    for index in range(per_pool * len(pools)):
        pool = pools[index % len(pools)]
        started = NOW - timedelta(minutes=1 + index % 180)
        job = new_job(f"run-{index:05d}", pool, teams[index % len(teams)], index % 3, started - timedelta(hours=1))
        jobs.append(lifecycle.mark_running(lifecycle.start(job, started, reason="fits"), started))
    return jobs


def pending_jobs(pools: Sequence[str], per_pool: int, teams: Sequence[str | None]) -> list[Job]:
    """Pending jobs, one in ten of each kind: flexible, spot, asking for a warm pool."""
    jobs = []
    for index in range(per_pool * len(pools)):
        pool = pools[index % len(pools)]
        job = new_job(f"wait-{index:05d}", pool, teams[index % len(teams)], index % 3, NOW - timedelta(seconds=index))
        kind = index % 10
        if kind == 1:
            other = pools[(index + 1) % len(pools)]
            job = replace(job, placements=(Placement(pool, 1, pool=pool), Placement(other, 1, pool=other)))
        elif kind == 2 and pool in SPOT_TYPES:
            job = replace(job, purchase=Purchase.SPOT)
        elif kind == 3:
            job = replace(job, warm_key=f"family-{index % 7}")
        jobs.append(job)
    return jobs


def read_by_the_pass(live: Sequence[Job], pending: Sequence[Job], config: SchedulerConfig) -> Snapshot:
    """What a deployed pass reads: every live job, and the pending jobs of each pool's and each
    team's queue front (service/passes.py `_pending`, over in-memory jobs)."""
    ledger = Ledger.measure(Snapshot(jobs=tuple(live)), config)
    pools = sorted(set(config.pools) | {pool for job in live for pool in job.demand})
    queue = sorted(pending, key=lambda job: job.order)
    chosen: dict[str, Job] = {}
    for pool, size in listed_fronts(front_sizes(pools, ledger, backfill=config.backfill)).items():
        chosen.update((job.name, job) for job in [job for job in queue if pool in job.where.pools][:size])
    team_sizes = team_front_sizes(pools, ledger, config.teams, backfill=config.backfill, team_tags=frozenset(TEAMS))
    for (pool, team), size in listed_fronts(team_sizes).items():
        front = [job for job in queue if pool in job.where.pools and (job.team or "") == team][:size]
        chosen.update((job.name, job) for job in front)
    return Snapshot(jobs=(*live, *chosen.values()), team_spend=dict.fromkeys(TEAMS, 0.0), prices=config.prices)


def deadline() -> Callable[[], float]:
    """CPU-seconds left of ESTIMATE_CAP_S from now: an estimate that needs more stops there (as a
    pass out of time does), and its figure reads "at least"."""
    until = time.process_time() + ESTIMATE_CAP_S
    return lambda: until - time.process_time()


def best_cpu(action: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The least CPU-seconds `action` took over `repeats` runs, and what it returned."""
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.process_time()
        result = action()
        best = min(best, time.process_time() - started)
    return best, result


def fleet(repeats: int) -> dict[str, Any]:
    pools = [*TYPES, *(spot_pool(pool) for pool in SPOT_TYPES)]
    config = config_of(TYPES, 100, TEAMS, 12)
    live = running_jobs(TYPES, 100, TEAMS)
    pending = pending_jobs(TYPES, 500, TEAMS)
    snapshot = read_by_the_pass(live, pending, config)
    read = [job for job in snapshot.jobs if not job.is_live]
    baseline, _ = best_cpu(lambda: sorted(read, key=lambda job: job.order), repeats)
    decide_s, decision = best_cpu(lambda: decide_pass(snapshot, NOW, config), repeats)
    estimates_s, estimates = best_cpu(lambda: estimate_starts(snapshot, NOW, config, time_left=deadline()), 1)
    return {
        "pools": len(pools),
        "running": len(live),
        "pending": len(pending),
        "pending read": len(read),
        "actions": len(decision.actions),
        "estimated": len(estimates),
        "baseline_s": baseline,
        "decide_s": decide_s,
        "estimates_s": estimates_s,
    }


def audit(repeats: int) -> dict[str, Any]:
    """The audit's shape: 5 pools of 64 instances, 300 running and 200 pending jobs, no teams."""
    pools = TYPES[:5]
    config = config_of(pools, 64, (), 0)
    live = running_jobs(pools, 60, [None])
    pending = pending_jobs(pools, 40, [None])
    snapshot = Snapshot(jobs=(*live, *pending), prices=config.prices)
    estimates_s, estimates = best_cpu(lambda: estimate_starts(snapshot, NOW, config, time_left=deadline()), 1)
    return {"running": len(live), "pending": len(pending), "estimated": len(estimates), "estimates_s": estimates_s}


def verdicts(fleet_figures: dict[str, Any], audit_figures: dict[str, Any]) -> list[list[str]]:
    figures = {
        "decide": fleet_figures["decide_s"],
        "estimates": fleet_figures["estimates_s"],
        "audit estimates": audit_figures["estimates_s"],
    }
    return [
        [
            name,
            f"{'≥ ' if value >= ESTIMATE_CAP_S else ''}{value:.3f}",
            f"{value / LAMBDA_VCPU:.2f}",
            f"≤ {TARGETS[name]}",
            "MET" if value <= TARGETS[name] else "MISSED",
        ]
        for name, value in figures.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measure; the least CPU is kept")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    args = parser.parse_args()
    fleet_figures = fleet(args.repeats)
    audit_figures = audit(args.repeats)
    base = max(fleet_figures["baseline_s"], 1e-6)
    print(
        f"Fleet: {fleet_figures['pools']} pools, {fleet_figures['running']} running, {fleet_figures['pending']} "
        f"pending ({fleet_figures['pending read']} read by the pass), {len(TEAMS)} teams, every feature on."
    )
    print(
        f"Baseline (sorting what the pass read into queue order): {fleet_figures['baseline_s']:.4f} CPU-s; "
        f"decide {fleet_figures['decide_s'] / base:.0f}x it, estimates {fleet_figures['estimates_s'] / base:.0f}x it."
    )
    headers = ["measure", "CPU-s here", "Lambda 512 MB s", "target (CPU-s)", "verdict"]
    print(tabulate(verdicts(fleet_figures, audit_figures), headers=headers, tablefmt="github"))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"fleet": fleet_figures, "audit": audit_figures}, indent=2))


if __name__ == "__main__":
    main()
