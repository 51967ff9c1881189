"""decide reads its snapshot and returns actions: it changes nothing and needs no AWS."""

from __future__ import annotations

import ast
import copy
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import smq_lambda.scheduling
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import Snapshot

from .builders import G5, NOW, P5, pools, queue

SCHEDULING = Path(smq_lambda.scheduling.__file__).parent
AWS_MODULES = ("boto3", "botocore", "aws_lambda_powertools", "sagemaker", "moto", "aiobotocore")


def busy_snapshot() -> Snapshot:
    return (
        queue()
        .running("low", 0, {P5: 2})
        .running("bf", 1, {G5: 2}, backfill=True)
        .preempting("going", 0)
        .pending("head", 3, {P5: 3, G5: 1}, reason="old reason")
        .pending("next", 1, {G5: 1})
        .pending("retry", 2, backoff_until=NOW.replace(year=2099))
        .external(P5, 1)
        .build()
    )


def test_decide_does_not_mutate_its_snapshot() -> None:
    snapshot = busy_snapshot()
    before = copy.deepcopy(snapshot)
    requests_before = [copy.deepcopy(job.request) for job in snapshot.jobs]

    actions = decide(snapshot, NOW, pools(p5=4, g5=2, backfill=True))

    assert actions
    assert snapshot == before
    assert [dict(job.demand) for job in snapshot.jobs] == [dict(job.demand) for job in before.jobs]
    assert [job.request for job in snapshot.jobs] == requests_before


def test_decide_is_deterministic_whatever_the_order_of_the_snapshot() -> None:
    snapshot = busy_snapshot()
    config = pools(p5=4, g5=2, backfill=True)
    shuffled = list(snapshot.jobs)
    random.Random(3).shuffle(shuffled)

    first = decide(snapshot, NOW, config)
    second = decide(snapshot, NOW, config)
    reordered = decide(replace(snapshot, jobs=tuple(shuffled)), NOW, config)

    assert first == second == reordered


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_module_under_scheduling_imports_aws() -> None:
    offenders = {
        path.name: sorted(name for name in _imported_modules(path) if name.split(".")[0] in AWS_MODULES)
        for path in SCHEDULING.glob("*.py")
    }
    outside = {
        path.name: sorted(
            name
            for name in _imported_modules(path)
            if name.startswith("smq_lambda.") and name.split(".")[1] not in ("domain", "scheduling")
        )
        for path in SCHEDULING.glob("*.py")
    }

    assert {name: found for name, found in offenders.items() if found} == {}
    assert {name: found for name, found in outside.items() if found} == {}


def test_importing_decide_loads_no_aws_library() -> None:
    probe = "import sys, smq_lambda.scheduling.decide; print(sorted(m for m in sys.modules if m.split('.')[0] in %r))"
    result = subprocess.run([sys.executable, "-c", probe % (AWS_MODULES,)], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "[]"
