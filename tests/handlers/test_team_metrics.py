"""Per team and pool metrics: what a pass measured of each team, as EMF records with the dimensions
the dashboard's SEARCH expressions look for (team, pool, service)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from smq.local.lambda_context import LambdaContext
from smq_lambda.domain.config.teams import UNASSIGNED, Quota, Teams
from smq_lambda.handlers import scheduler as scheduler_handler
from smq_lambda.handlers.team_metrics import record_team_metrics
from smq_lambda.pass_summary import PassSummary, PoolMeasure, TeamMeasure

from tests.service.harness import POOL, World

NOW = datetime(2024, 5, 1, 12, tzinfo=UTC)


def team_records(output: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(team, pool) → {metric: value} of the EMF records with a team dimension."""
    records: dict[tuple[str, str], dict[str, Any]] = {}
    for line in output.splitlines():
        record = json.loads(line) if line.startswith("{") else {}
        if "team" not in record:
            continue
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "smq"
        assert [sorted(dimensions) for dimensions in directive["Dimensions"]] == [["pool", "service", "team"]]
        units = {metric["Name"]: metric["Unit"] for metric in directive["Metrics"]}
        records[(record["team"], record["pool"])] = {name: (one(record[name]), unit) for name, unit in units.items()}
    return records


def one(value: Any) -> Any:
    """A metric's value (powertools writes a list of one)."""
    if isinstance(value, list):
        (value,) = value
    return value


def test_each_team_and_pool_gets_its_use_borrowing_pending_and_longest_wait(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = PassSummary(
        pools=(PoolMeasure("ml.g5.xlarge", 4, 4),),
        measured_at=NOW,
        teams=(
            TeamMeasure("vision", "ml.g5.xlarge", 2, 3, borrowed=1, lent=0, pending=2, longest_wait_s=90.5),
            TeamMeasure(UNASSIGNED, "ml.g5.xlarge", 2, 1, borrowed=0, lent=1),
        ),
    )

    record_team_metrics(report, "smq")

    assert team_records(capsys.readouterr().out) == {
        ("vision", "ml.g5.xlarge"): {
            "TeamInUse": (3.0, "Count"),
            "TeamBorrowed": (1.0, "Count"),
            "TeamPending": (2.0, "Count"),
            "TeamWaitTime": (90.5, "Seconds"),
        },
        (UNASSIGNED, "ml.g5.xlarge"): {
            "TeamInUse": (1.0, "Count"),
            "TeamBorrowed": (0.0, "Count"),
            "TeamPending": (0.0, "Count"),
        },
    }, "no wait without pending jobs"


def test_nothing_is_emitted_without_team_measures(capsys: pytest.CaptureFixture[str]) -> None:
    record_team_metrics(PassSummary(pools=(), measured_at=NOW), "smq")
    record_team_metrics(None, "smq")

    assert capsys.readouterr().out == ""


def test_every_invocation_publishes_the_team_measures_of_its_pass(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World(capacity={POOL: 2})
    world.config.config = replace(world.config.config, teams=Teams(quotas={"vision": Quota({POOL: 1})}))
    world.submit("untagged", 0)
    world.progress("untagged", "InProgress")
    monkeypatch.setattr(scheduler_handler, "default_scheduler", lambda: world.scheduler)
    scheduler_handler.metrics.clear_metrics()
    capsys.readouterr()

    scheduler_handler.handler({"source": "smq.api", "reason": "test"}, LambdaContext(function_name="smq-scheduler"))

    records = team_records(capsys.readouterr().out)
    assert records[(UNASSIGNED, POOL)]["TeamInUse"] == (1.0, "Count")
    assert records[("vision", POOL)]["TeamInUse"] == (0.0, "Count")
