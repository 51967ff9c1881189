"""What the simulation benchmarks with targets share: one case per seed, the figures written as
JSON, each verdict printed, and exit 1 naming every target a seed missed.

A case returns its figures with `targets`: a label per target, each `{"value": ..., "met": bool}`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

Verdicts = Mapping[str, Mapping[str, Any]]


def print_verdicts(verdicts: Verdicts) -> None:
    for label, verdict in verdicts.items():
        print(f"- {label}: {verdict['value']} {'MET' if verdict['met'] else 'MISSED'}")


def run_seeds(name: str, description: str, case: Callable[[int, int], dict[str, Any]], *, jobs: int) -> int:
    """Parse `--seeds`, `--jobs` and `--json`, run `case(seed, jobs)` for each seed, and return the
    exit status: 1 when any seed missed a target."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 11])
    parser.add_argument("--jobs", type=int, default=jobs)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    report = {str(seed): case(seed, args.jobs) for seed in args.seeds}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    missed = [
        f"seed {seed}: {label} (got {verdict['value']})"
        for seed, figures in report.items()
        for label, verdict in figures["targets"].items()
        if not verdict["met"]
    ]
    if missed:
        print(f"\n{name}: targets missed:\n" + "\n".join(f"  {line}" for line in missed))
        return 1
    return 0
