"""`smq costs` and the estimated cost where users look (`smq describe`, `smq submit`, fit()'s
waiting line): the texts (pure) and the commands against the real API handler
(tests/client/queue_world.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from smq.cli import main as cli
from smq.follow import queue_changes
from smq.formatting import costs_table, describe_text, short_owner
from smq.jobs import estimated_cost_text, queued_message, usd_text
from smq.queue import TrainingQueue
from smq_lambda.domain.costs.costs import AttemptCost

from tests.client.queue_world import POOL, QueueWorld, training_request
from tests.client.test_cli import ALICE, job, rows, run

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
BOB = "arn:aws:iam::123456789012:user/bob"


def figures(spend: float | None, attempts: int, unpriced: int = 0, **fields: Any) -> dict[str, Any]:
    return {
        "spend_usd": spend,
        "on_demand_equivalent_usd": None if spend is None else spend + 1,
        "spot_savings_usd": None if spend is None else 1.0,
        "waste_usd": None if spend is None else 0.0,
        "idle_stop_avoided_usd": None if spend is None else 0.0,
        "attempts": attempts,
        "unpriced_attempts": unpriced,
        "accruing_usd": 0.0,
        "running": 0,
        "unpriced_running": 0,
        **fields,
    }


def report(by: str, *groups: tuple[str, dict[str, Any]], total: dict[str, Any]) -> dict[str, Any]:
    return {
        "by": by,
        "since": "2024-05-01T00:00:00.000Z",
        "until": "2024-05-01T12:00:00.000Z",
        "prices": {"source": "configuration+defaults"},
        "total": total,
        "groups": [{"group": name, **values} for name, values in groups],
    }


# ---------------------------------------------------------------------- texts (pure)


def test_the_costs_table_says_unpriced_where_nothing_could_be_priced_never_zero() -> None:
    table = costs_table(
        report(
            "team",
            ("vision", figures(1234.5, 3, 1, accruing_usd=2.0, running=2, unpriced_running=1)),
            ("nlp", figures(0.001, 1)),
            ("robotics", figures(None, 2, 2, accruing_usd=None, running=1, unpriced_running=1)),
            total=figures(1234.501, 6, 3, accruing_usd=2.0, running=3, unpriced_running=2),
        )
    )

    assert table.splitlines()[0].split()[:2] == ["Team", "Spend"]
    assert rows(table) == [
        ["vision", "$1,234.50", "$1,235.50", "$1.00", "$0.00", "$0.00", "$2.00 (+1 unpriced)", "3 (1 unpriced)"],
        ["nlp", "<$0.01", "$1.00", "$1.00", "$0.00", "$0.00", "-", "1"],
        ["robotics", "unpriced", "unpriced", "unpriced", "unpriced", "unpriced", "unpriced", "2 (2 unpriced)"],
        ["Total", "$1,234.50", "$1,235.50", "$1.00", "$0.00", "$0.00", "$2.00 (+2 unpriced)", "6 (3 unpriced)"],
    ]


def test_the_costs_table_by_owner_shortens_arns_and_by_tag_names_the_tag() -> None:
    by_owner = costs_table(report("owner", (ALICE, figures(1.0, 1)), total=figures(1.0, 1)))
    by_tag = costs_table(report("tag:project", ("apollo", figures(1.0, 1)), total=figures(1.0, 1)))

    assert [row[0] for row in rows(by_owner)] == ["user/alice", "Total"]
    assert by_tag.splitlines()[0].split()[0] == "project"


@pytest.mark.parametrize(
    ("estimate", "text"),
    [
        ({"usd": 12.5, "usd_per_hour": 5.0, "seconds": 9000, "ceiling": False}, "est. $12.50"),
        ({"usd": 40.0, "usd_per_hour": 40.0, "seconds": 3600, "ceiling": True}, "at most $40.00"),
        (None, "unpriced"),
    ],
)
def test_an_estimate_reads_as_an_estimate_a_ceiling_or_unpriced(estimate: Any, text: str) -> None:
    waiting = job("patient", "pending", 0, position=2, estimated_cost=estimate)

    assert estimated_cost_text(waiting) == text
    assert queue_changes(None, waiting) == [f"patient is pending at position 2 in ml.p5.48xlarge; {text}"]
    assert f"Estimated cost: {text}" in describe_text(waiting, NOW)
    assert queued_message(waiting, {}).endswith(f"pending, position 2; {text}")


def test_a_queue_that_does_not_estimate_costs_adds_nothing() -> None:
    waiting = job("patient", "pending", 0, position=2)

    assert estimated_cost_text(waiting) is None
    assert queue_changes(None, waiting) == ["patient is pending at position 2 in ml.p5.48xlarge"]
    assert "Estimated cost" not in describe_text(waiting, NOW)


def test_a_finished_job_shows_no_estimate() -> None:
    done = job(
        "done", "completed", 0, estimated_cost={"usd": 1.0, "usd_per_hour": 1.0, "seconds": 3600, "ceiling": True}
    )

    assert "Estimated cost" not in describe_text(done, NOW)


@pytest.mark.parametrize(("usd", "text"), [(None, "unpriced"), (0.0, "$0.00"), (0.004, "<$0.01"), (0.005, "$0.01")])
def test_dollars(usd: float | None, text: str) -> None:
    assert usd_text(usd) == text


# ---------------------------------------------------------------------- commands


def spent(name: str, usd: float | None, ended: datetime) -> AttemptCost:
    return AttemptCost(name, ended, False, 3600, 3600, usd, usd, *((0.0, 0.0, 0.0) if usd is not None else (None,) * 3))


@pytest.fixture
def spending(world: QueueWorld, tmp_path: Path) -> QueueWorld:
    """Vision spent $12 and runs a job for an hour at $2/h; nlp ran one unpriced attempt."""
    world.prices.prices = {POOL: 2.0}
    ended = world.clock() - timedelta(minutes=5)
    world.cost_records.record(spent("vision-1", 12.0, ended), {"team": "vision", "owner": ALICE})
    world.cost_records.record(spent("nlp-1", None, ended), {"team": "nlp", "owner": BOB})
    path = tmp_path / "running.json"
    path.write_text(json.dumps(training_request("running")))
    assert cli.main(["--api-url", world.url, "submit", str(path)]) == 0
    world.clock.advance(hours=1)
    return world


def test_smq_costs_prints_each_group_then_the_total(spending: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()

    code, out, err = run(capsys, "--api-url", spending.url, "costs", "--since", "7d")

    assert (code, err) == (0, "")
    table, _, footer = out.partition("\n\n")
    assert [(row[0], row[1], row[6], row[7]) for row in rows(table)] == [
        ("vision", "$12.00", "$2.00", "1"),
        ("nlp", "unpriced", "-", "1 (1 unpriced)"),
        ("Total", "$12.00", "$2.00", "2 (1 unpriced)"),
    ]
    assert footer.startswith("Attempts that ended since 2023-12-26 (UTC);")
    assert footer.rstrip().endswith("prices: configuration.")


def test_smq_costs_json_is_the_api_answer(spending: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()

    code, out, _ = run(capsys, "--api-url", spending.url, "costs", "--by", "owner", "--json")

    answer = json.loads(out)
    assert code == 0
    assert answer == TrainingQueue(api_url=spending.url).costs(by="owner")
    assert answer["by"] == "owner"
    assert [group["group"] for group in answer["groups"]] == [spending.job("running").owner], "its own row only"


def test_smq_costs_by_owner_adds_up_to_the_teams_total_and_says_what_the_caller_may_not_see(
    spending: QueueWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    """Alice's ended attempt counts in her team's spend; the caller, who runs a job of the team,
    may not see Alice's row: it is summed with every other owner's, and the text says so."""
    capsys.readouterr()
    _, by_team, _ = run(capsys, "--api-url", spending.url, "costs", "--since", "7d")

    code, out, err = run(capsys, "--api-url", spending.url, "costs", "--by", "owner", "--since", "7d")

    assert (code, err) == (0, "")
    table, _, footer = out.partition("\n\n")
    by_owner = rows(table)
    assert [row[0] for row in by_owner] == ["(other owners)", short_owner(spending.job("running").owner), "Total"]
    assert by_owner[-1] == rows(by_team.partition("\n\n")[0])[-1]
    assert "(other owners): the owners whose jobs you may not change, summed" in footer


def test_smq_costs_refusal_names_the_parameter(world: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--api-url", world.url, "costs", "--by", "tag:project")

    assert (code, out) == (1, "")
    assert err.startswith("smq: error: refused (400): by: 'project' is not a configured cost tag")


def test_smq_costs_with_nothing_spent_says_so(world: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--api-url", world.url, "costs") == (
        0,
        "No spend since 2024-01-01 (UTC) and nothing running.\n",
        "",
    )


def test_smq_submit_and_describe_show_the_estimated_cost(world: QueueWorld, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    world.prices.prices = {POOL: 2.0}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(training_request("estimated", instances=1)))

    _, submitted, _ = run(capsys, "--api-url", world.url, "submit", str(path))
    _, described, _ = run(capsys, "--api-url", world.url, "describe", "estimated")

    assert "; at most $2.00" in submitted
    assert "Estimated cost:" in described and "at most $2.00" in described
