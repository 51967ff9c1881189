"""`smq quotas`, `smq status --team` and the Team column: the tables (pure) and the commands against
the real API handler (tests/client/queue_world.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from smq.cli import main as cli
from smq.formatting import quotas_table, status_table
from smq.queue import TrainingQueue
from smq_lambda.domain.config.teams import Quota, Sharing, Teams

from tests.client.queue_world import POOL, QueueWorld, training_request
from tests.client.test_cli import job, rows, run

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def team_row(team: str, pool: str, quota: int | None, **fields: Any) -> dict[str, Any]:
    row = {"team": team, "pool": pool, "quota": quota, "in_use": 0, "borrowed": 0, "lent": 0, "pending": 0}
    return {**row, "sharing": "lend_and_borrow", "borrow_limit": None, **fields}


def test_quotas_table() -> None:
    table = quotas_table(
        [
            team_row("nlp", "ml.p5.48xlarge", 2, lent=1, sharing="lend", borrow_limit=0),
            team_row("vision", "ml.p5.48xlarge", 2, in_use=3, borrowed=1, pending=4, borrow_limit=2),
            team_row("(unassigned)", "ml.c5.xlarge", None, in_use=5),
        ]
    )

    assert table.splitlines()[0].split() == [
        "Team",
        "Pool",
        "Quota",
        "In",
        "use",
        "Borrowed",
        "Lent",
        "Pending",
        "Sharing",
    ]
    assert rows(table) == [
        ["nlp", "ml.p5.48xlarge", "2", "0", "0", "1", "0", "lend"],
        ["vision", "ml.p5.48xlarge", "2", "3", "1", "0", "4", "lend_and_borrow (borrows up to 2)"],
        ["(unassigned)", "ml.c5.xlarge", "unlimited", "5", "0", "0", "0", "lend_and_borrow"],
    ]


def test_the_status_table_has_a_team_column_only_when_some_job_has_a_team() -> None:
    untagged = [job("a", "pending", 1), job("b", "pending", 0, team=None)]
    tagged = [job("a", "pending", 1, team="vision"), job("b", "pending", 0, team=None)]

    assert "Team" not in status_table(untagged, NOW).splitlines()[0]
    header = status_table(tagged, NOW).splitlines()[0].split()
    assert header[:5] == ["Job", "Name", "State", "Priority", "Team"]
    assert [row[:4] for row in rows(status_table(tagged, NOW))] == [
        ["a", "pending", "1", "vision"],
        ["b", "pending", "0", "-"],
    ]


@pytest.fixture
def teams(world: QueueWorld, tmp_path: Path) -> QueueWorld:
    """Quotas: vision 1 instance of the pool (lends and borrows), nlp none. One vision job runs,
    a vision job and an nlp job wait."""
    world.config.config = replace(
        world.config.config,
        teams=Teams(quotas={"vision": Quota({POOL: 1}, borrow_limit=3), "nlp": Quota({}, sharing=Sharing.LEND)}),
    )
    for name, team, priority in (
        ("vision-running", "vision", 9),
        ("vision-waits", "vision", 5),
        ("nlp-waits", "nlp", 1),
    ):
        request = training_request(name, priority=priority)
        request["Tags"][0]["Value"] = team
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(request))
        assert cli.main(["--api-url", world.url, "submit", str(path)]) == 0
    return world


def test_smq_quotas_prints_each_team_and_pool(teams: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()

    code, out, err = run(capsys, "--api-url", teams.url, "quotas")

    assert (code, err) == (0, "")
    table, _, footer = out.partition("\n\n")
    assert rows(table) == [
        ["nlp", POOL, "0", "0", "0", "0", "1", "lend"],
        ["vision", POOL, "1", "1", "0", "0", "1", "lend_and_borrow (borrows up to 3)"],
    ]
    assert footer.startswith("Teams by the tag 'team'; in use as measured ")


def test_smq_quotas_json_is_the_api_answer(teams: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()

    code, out, _ = run(capsys, "--api-url", teams.url, "quotas", "--json")

    answer = json.loads(out)
    assert code == 0
    assert answer == TrainingQueue(api_url=teams.url).quotas()
    assert set(answer) == {"teams", "team_tag", "measured_at"}
    assert [(row["team"], row["pool"], row["pending"]) for row in answer["teams"]] == [
        ("nlp", POOL, 1),
        ("vision", POOL, 1),
    ]


def test_smq_quotas_without_quotas_says_so(world: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--api-url", world.url, "quotas") == (0, "No team quotas configured.\n", "")


def test_smq_status_team_shows_one_teams_jobs(teams: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()

    _, everyone, _ = run(capsys, "--api-url", teams.url, "status")
    _, vision, _ = run(capsys, "--api-url", teams.url, "status", "--team", "vision")
    _, as_json, _ = run(capsys, "--api-url", teams.url, "status", "--team", "nlp", "--json")
    none = run(capsys, "--api-url", teams.url, "status", "--team", "robotics")

    assert [(row[0], row[3]) for row in rows(everyone)] == [
        ("vision-running", "vision"),
        ("vision-waits", "vision"),
        ("nlp-waits", "nlp"),
    ]
    assert [row[0] for row in rows(vision)] == ["vision-running", "vision-waits"]
    assert [(job["name"], job["team"]) for job in json.loads(as_json)] == [("nlp-waits", "nlp")]
    assert none == (0, "No active jobs of team 'robotics'.\n", "")
