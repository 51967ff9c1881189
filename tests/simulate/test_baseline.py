"""The scheduling pass changed nothing it was not meant to: `smq simulate` on the generated
`mixed`, `kueue`, `spot` and `teams` workloads, seeds 7 and 11, backfill on and off, gives the
metrics.json committed under tests/simulate/baseline/, byte for byte.

A difference that is meant (a bug fixed, a rule changed on purpose) is a new baseline in a commit
of its own, with the reason in its message: see tests/simulate/baseline/regenerate.py. The kueue
cases take most of the time and are marked slow, as is every workload's second seed; `make test`
runs them all.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.simulate.baseline.regenerate import CASES, Case, metrics_text

REGENERATE = ".venv/bin/python -m tests.simulate.baseline.regenerate"


def slow(case: Case) -> bool:
    """The kueue replays, and every workload's second seed: `make test-fast` replays each workload once."""
    return case.workload == "kueue" or case.seed != CASES[0].seed


@pytest.mark.parametrize(
    "case",
    [pytest.param(case, id=case.name, marks=[pytest.mark.slow] if slow(case) else []) for case in CASES],
)
def test_metrics_match_the_baseline(case: Case, tmp_path: Path) -> None:
    stored = case.path.read_text()

    fresh = metrics_text(case, tmp_path)

    if fresh != stored:
        pytest.fail(
            f"{case.path.name}: the metrics differ from the baseline\n{difference(stored, fresh)}", pytrace=False
        )


def test_every_baseline_file_is_a_case() -> None:
    stored = {path.name for path in CASES[0].path.parent.glob("*.json")}

    assert stored == {case.path.name for case in CASES}


def difference(stored: str, fresh: str) -> str:
    """One line per figure that differs (its path of keys, baseline -> now), or the text's diff when only
    the layout differs."""
    before, after = _leaves(json.loads(stored)), _leaves(json.loads(fresh))
    lines = [
        f"  {path}: {before.get(path, '(absent)')} -> {after.get(path, '(absent)')}"
        for path in sorted(before.keys() | after.keys())
        if before.get(path, _ABSENT) != after.get(path, _ABSENT)
    ]
    if not lines:
        lines = list(difflib.unified_diff(stored.splitlines(), fresh.splitlines(), "baseline", "now", lineterm=""))
    return "\n".join([*lines, f"(meant? then a new baseline in its own commit: {REGENERATE})"])


_ABSENT = object()


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        if not value:
            return {path: {}}
        return {
            leaf: found
            for key, item in value.items()
            for leaf, found in _leaves(item, f"{path}/{key}" if path else str(key)).items()
        }
    return {path: value}
