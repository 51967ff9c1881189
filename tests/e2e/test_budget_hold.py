"""End to end on the local stack (issue 23): a team over its hold budget. Team vision's first job
spends more than vision's whole budget; vision's next job then waits with a reason that names the
budget while a job of team nlp starts beside it; an operator raises the budget in the configuration
document, and the waiting job starts at a pass after that.

The price is $1 per instance-second, so that a few billed seconds overspend a $2 budget, and each
job expects to train one second (`smq:expected-duration`), so that its estimate ($1) fits an
unspent budget. The functions re-read the configuration document every second here (30 s when
deployed) to keep the test short."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, rereading_stack, synthetic_request, wait_for, write_config

PRICE = 3600.0
"""US dollars per instance-hour: $1 per instance-second."""
BUDGET_USD = 2.0
CONFIG: dict[str, Any] = {
    "pools": {POOL: 2},
    "prices": {POOL: PRICE},
    "budgets": {"vision": {"monthly_usd": BUDGET_USD, "action": "hold"}},
}
STARTED = {"starting", "running", "completed"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        config=CONFIG, executor="synthetic", workdir=tmp_path_factory.mktemp("budget-hold"), reconcile_every_seconds=1
    )
    with rereading_stack(options) as running:
        yield running


def team_job(name: str, team: str, *, duration: float) -> dict[str, Any]:
    request = synthetic_request(name, duration=duration)
    tags = [tag for tag in request["Tags"] if tag["Key"] != "team"]
    request["Tags"] = [*tags, {"Key": "team", "Value": team}, {"Key": "smq:expected-duration", "Value": "1"}]
    return request


def test_a_team_over_its_budget_waits_while_another_starts_until_the_budget_is_raised(stack: LocalStack) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")
    client.add_job(team_job("vision-spends", "vision", duration=2))
    wait_for(client, "vision-spends", {"completed"}, timeout=60)

    client.add_job(team_job("vision-next", "vision", duration=1))
    client.add_job(team_job("nlp-runs", "nlp", duration=1))

    assert wait_for(client, "nlp-runs", STARTED, timeout=30)["state"] in STARTED
    held = client.get_job("vision-next")
    assert held["state"] == "pending", "a free instance is there: only the budget holds it"
    reason = held["reason"] or ""
    assert reason.startswith("held by budget: team vision's hold budget of $2.00 a month"), held
    assert "$0.00 left" in reason and "spent this month" in reason and "reset on" in reason

    write_config(stack, {**CONFIG, "budgets": {"vision": {"monthly_usd": 1000, "action": "hold"}}})

    assert wait_for(client, "vision-next", STARTED, timeout=30)["state"] in STARTED
