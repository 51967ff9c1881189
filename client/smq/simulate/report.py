"""What `smq simulate` prints and writes: a table of the metrics (policies side by side, with
ratios to smq's), with team quotas a table of the per-team figures, with prices a table of the
costs per team and budget, with --estimates a table of the start estimates' accuracy,
metrics.json, timeline.csv and gantt.png."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from smq_lambda.replay.timeline import TIMELINE_COLUMNS, Segment
from smq_lambda.simulation.engine import Result
from tabulate import tabulate

HOUR = 3600.0
MINUTE = 60.0
Row = tuple[str, tuple[str, ...], float]
"""A label, the path of its value in one policy's metrics, and the unit to divide it by."""


def metric_rows(metrics: Mapping[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for pool in metrics["pools"]:
        rows.append((f"utilization {pool}", ("pools", pool, "utilization"), 1.0))
        rows.append((f"utilization while waiting {pool}", ("pools", pool, "utilization_while_waiting"), 1.0))
        rows.append((f"goodput {pool}", ("pools", pool, "goodput"), 1.0))
    rows += [
        (f"wait {statistic} priority {priority} (min)", ("wait_s", priority, statistic), MINUTE)
        for priority in metrics["wait_s"]
        for statistic in ("p50", "p95", "max")
    ]
    rows += [
        ("preemptions", ("preemptions",), 1.0),
        ("work lost to preemption (h)", ("lost_work_by_cause_s", "preemption"), HOUR),
        ("work lost to interruptions (h)", ("lost_work_by_cause_s", "interruption"), HOUR),
        ("priority inversion (h, summed over jobs)", ("inversion_s",), HOUR),
        ("longest inversion (min)", ("inversion_max_s",), MINUTE),
        ("spot fallbacks", ("spot_fallbacks",), 1.0),
        ("starts refused by SageMaker", ("refused_starts",), 1.0),
        ("makespan (h)", ("makespan_s",), HOUR),
        ("unfinished jobs", ("unfinished",), 1.0),
    ]
    if "placement" in metrics:
        rows += [
            ("flexible jobs started at a later preference", ("placement", "started_elsewhere"), 1.0),
            ("wait p50 flexible jobs (min)", ("placement", "flexible_wait_s", "p50"), MINUTE),
            ("wait p95 flexible jobs (min)", ("placement", "flexible_wait_s", "p95"), MINUTE),
        ]
    if "warm_pools" in metrics:
        rows += [
            ("warm pools retained", ("warm_pools", "retained"), 1.0),
            ("warm pool reuse rate", ("warm_pools", "reuse_rate"), 1.0),
            ("warm pools ended for a job ahead", ("warm_pools", "released"), 1.0),
            ("warm idle (instance-h)", ("warm_pools", "idle_hours"), 1.0),
            ("reused warm (instance-h)", ("warm_pools", "reused_hours"), 1.0),
            ("start-up saved by reuse (h)", ("warm_pools", "startup_saved_s"), HOUR),
        ]
    if "purchase" in metrics:
        rows += [
            ("spot share of spot jobs' instance-h", ("purchase", "spot_share"), 1.0),
            ("spot jobs' starts on demand", ("purchase", "on_demand_starts"), 1.0),
        ]
    return rows


def read(metrics: Mapping[str, Any], path: tuple[str, ...], unit: float) -> float:
    """The value at `path` in `unit`s; a list counts its members."""
    value: Any = metrics
    for key in path:
        value = value[key]
    return len(value) if isinstance(value, list) else value / unit


def metrics_table(results: Mapping[str, Mapping[str, Any]]) -> str:
    """One column per policy; with more than one, a ratio column per policy against the first."""
    names = list(results)
    first = names[0]
    headers = ["metric", *names, *(f"{name} / {first}" for name in names[1:])]
    table = []
    for label, path, unit in metric_rows(results[first]):
        values = [read(results[name], path, unit) for name in names]
        ratios = [_ratio(value, values[0]) for value in values[1:]]
        table.append([label, *(_number(value) for value in values), *ratios])
    return tabulate(table, headers=headers, tablefmt="github", disable_numparse=True)


TEAM_HEADERS = (
    "team",
    "pool",
    "quota",
    "jobs",
    "share of pool",
    "share of quota",
    "borrowed (instance-h)",
    "lent (instance-h)",
    "quota kept",
    "wait p50 (min)",
    "wait p95 (min)",
    "reclaims",
    "reclaim latency p50 / max (min)",
)


def team_table(results: Mapping[str, Mapping[str, Any]]) -> str | None:
    """One row per team and pool (and policy, with more than one); None when no run had quotas."""
    measured = {name: metrics["teams"] for name, metrics in results.items() if "teams" in metrics}
    if not measured:
        return None
    several = len(results) > 1
    table = []
    for name, teams in measured.items():
        for team, figures in teams.items():
            wait, latency = figures["wait_s"], figures["reclaim_latency_s"]
            for pool, shares in figures["pools"].items():
                row = [
                    team,
                    pool,
                    str(shares["quota"]),
                    str(figures["jobs"]),
                    f"{shares['share_of_capacity']:.3f}",
                    "-" if shares["share_of_quota"] is None else f"{shares['share_of_quota']:.3f}",
                    _number(shares["borrowed_instance_s"] / HOUR),
                    _number(shares["lent_instance_s"] / HOUR),
                    f"{shares['quota_kept']:.3f}",
                    _number(wait["p50"] / MINUTE),
                    _number(wait["p95"] / MINUTE),
                    str(figures["reclaims"]),
                    f"{_number(latency['p50'] / MINUTE)} / {_number(latency['max'] / MINUTE)}",
                ]
                table.append([name, *row] if several else row)
    headers = ["policy", *TEAM_HEADERS] if several else list(TEAM_HEADERS)
    return tabulate(table, headers=headers, tablefmt="github", disable_numparse=True)


ESTIMATE_HEADERS = (
    "estimates",
    "priority",
    "measured",
    "within band",
    "within 1 / 10 min",
    "median error / wait",
    "median error (min)",
    "max-runtime: within band",
    "max-runtime: within 1 / 10 min",
    "max-runtime: median error / wait",
    "max-runtime: median error (min)",
)


def estimate_table(results: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Per moment (each job's first estimate of a wait, the sampled passes) and group ("all",
    "waited", each priority): the learned estimates beside the max-runtime ones of the same run;
    then the learned ones per kind (band, point, ceiling). None when no run measured estimates."""
    measured = next((metrics["estimates"] for metrics in results.values() if "estimates" in metrics), None)
    if measured is None:
        return None
    learned, ceiling = measured["learned"], measured["max_runtime"]
    table = []
    for moment, groups in learned.items():
        for group, figures in groups.items():
            if group in ("unmeasured", "kinds"):
                continue
            other = ceiling[moment][group]
            table.append([moment, group, str(figures["measured"]), *_accuracy(figures), *_accuracy(other)])
        for kind, figures in groups["kinds"].items():
            table.append([moment, f"kind: {kind}", str(figures["measured"]), *_accuracy(figures), "", "", "", ""])
    return tabulate(table, headers=list(ESTIMATE_HEADERS), tablefmt="github", disable_numparse=True)


def _accuracy(figures: Mapping[str, Any]) -> list[str]:
    if not figures["measured"]:
        return ["-", "-", "-", "-"]
    return [
        f"{figures['within_band']:.3f}",
        f"{figures['within_1_min']:.3f} / {figures['within_10_min']:.3f}",
        f"{figures['median_error_share']:.3f}",
        _number(figures["median_error_s"] / MINUTE),
    ]


COST_HEADERS = (
    "team",
    "spend",
    "on-demand equivalent",
    "spot savings",
    "waste",
    "unpriced attempts",
    "budget / month",
    "held jobs",
    "held (h)",
)


def cost_table(results: Mapping[str, Mapping[str, Any]]) -> str | None:
    """One row per team and a total (per policy, with more than one); None when no run was priced."""
    measured = {name: metrics["cost"] for name, metrics in results.items() if "cost" in metrics}
    if not measured:
        return None
    several = len(results) > 1
    table = []
    for name, cost in measured.items():
        budgets = cost.get("budgets", {})
        groups = [*cost["teams"].items(), *((team, None) for team in budgets if team not in cost["teams"])]
        for team, figures in [*groups, ("total", cost["total"])]:
            budget = budgets.get(team)
            row = [
                team,
                *_dollars(figures),
                f"${budget['monthly_usd']:,.2f} {budget['action']}" if budget else "-",
                str(budget["held_jobs"]) if budget else "-",
                _number(budget["held_s"] / HOUR) if budget else "-",
            ]
            table.append([name, *row] if several else row)
    headers = ["policy", *COST_HEADERS] if several else list(COST_HEADERS)
    return tabulate(table, headers=headers, tablefmt="github", disable_numparse=True)


def _dollars(figures: Mapping[str, Any] | None) -> list[str]:
    """Spend, on-demand equivalent, spot savings, waste and unpriced attempts; none for a team with
    a budget and no attempt."""
    if figures is None:
        return ["$0.00", "$0.00", "$0.00", "$0.00", "0"]
    keys = ("spend_usd", "on_demand_equivalent_usd", "spot_savings_usd", "waste_usd")
    return [*(f"${figures[key]:,.2f}" for key in keys), str(figures["unpriced_attempts"])]


def write_outputs(directory: Path, result: Result, pools: Mapping[str, int], title: str) -> str | None:
    """metrics.json, timeline.csv and gantt.png in `directory`; returns why the chart was not
    drawn (matplotlib missing), None when it was."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "metrics.json").write_text(metrics_json(result.metrics))
    write_timeline(directory / "timeline.csv", result.segments)
    from smq.simulate.gantt import MissingPlotting, draw_gantt

    try:
        draw_gantt(result.segments, pools, directory / "gantt.png", title=title)
    except MissingPlotting as exc:
        return str(exc)
    return None


def metrics_json(metrics: Mapping[str, Any]) -> str:
    """The text of metrics.json."""
    return json.dumps(metrics, indent=2) + "\n"


def write_timeline(path: Path, segments: Sequence[Segment]) -> None:
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=TIMELINE_COLUMNS)
        writer.writeheader()
        for segment in segments:
            writer.writerows(segment.rows())


def _number(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


def _ratio(value: float, base: float) -> str:
    if base == 0:
        return "-" if value == 0 else "inf"
    return f"{value / base:.2f}"
