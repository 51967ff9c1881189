"""What `smq simulate` prints and writes: a table of the metrics (policies side by side, with
ratios to smq's), metrics.json, timeline.csv and gantt.png."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from smq_lambda.simulation.engine import Result
from smq_lambda.simulation.timeline import TIMELINE_COLUMNS, Segment
from tabulate import tabulate

HOUR = 3600.0
MINUTE = 60.0
Row = tuple[str, Callable[[Mapping[str, Any]], float]]


def metric_rows(metrics: Mapping[str, Any]) -> list[Row]:
    """The rows of the table, each a label and how to read its value from one policy's metrics."""
    rows: list[Row] = []
    for pool in metrics["pools"]:
        rows.append((f"utilization {pool}", lambda m, pool=pool: m["pools"][pool]["utilization"]))
        rows.append(
            (f"utilization while waiting {pool}", lambda m, pool=pool: m["pools"][pool]["utilization_while_waiting"])
        )
        rows.append((f"goodput {pool}", lambda m, pool=pool: m["pools"][pool]["goodput"]))
    for priority in metrics["wait_s"]:
        for statistic in ("p50", "p95", "max"):
            rows.append(
                (
                    f"wait {statistic} priority {priority} (min)",
                    lambda m, p=priority, s=statistic: m["wait_s"][p][s] / MINUTE,
                )
            )
    rows += [
        ("preemptions", lambda m: m["preemptions"]),
        ("work lost to preemption (h)", lambda m: m["lost_work_by_cause_s"]["preemption"] / HOUR),
        ("work lost to interruptions (h)", lambda m: m["lost_work_by_cause_s"]["interruption"] / HOUR),
        ("priority inversion (h, summed over jobs)", lambda m: m["inversion_s"] / HOUR),
        ("longest inversion (min)", lambda m: m["inversion_max_s"] / MINUTE),
        ("spot fallbacks", lambda m: m["spot_fallbacks"]),
        ("starts refused by SageMaker", lambda m: m["refused_starts"]),
        ("makespan (h)", lambda m: m["makespan_s"] / HOUR),
        ("unfinished jobs", lambda m: len(m["unfinished"])),
    ]
    return rows


def metrics_table(results: Mapping[str, Mapping[str, Any]]) -> str:
    """One column per policy; with more than one, a ratio column per policy against the first."""
    names = list(results)
    first = names[0]
    headers = ["metric", *names, *(f"{name} / {first}" for name in names[1:])]
    table = []
    for label, read in metric_rows(results[first]):
        values = [read(results[name]) for name in names]
        ratios = [_ratio(value, values[0]) for value in values[1:]]
        table.append([label, *(_number(value) for value in values), *ratios])
    return tabulate(table, headers=headers, tablefmt="github", disable_numparse=True)


def write_outputs(directory: Path, result: Result, pools: Mapping[str, int], title: str) -> str | None:
    """metrics.json, timeline.csv and gantt.png in `directory`; returns why the chart was not
    drawn (matplotlib missing), None when it was."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "metrics.json").write_text(json.dumps(result.metrics, indent=2) + "\n")
    write_timeline(directory / "timeline.csv", result.segments)
    from smq.simulate.gantt import MissingPlotting, draw_gantt

    try:
        draw_gantt(result.segments, pools, directory / "gantt.png", title=title)
    except MissingPlotting as exc:
        return str(exc)
    return None


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
