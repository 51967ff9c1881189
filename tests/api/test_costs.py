"""GET /costs and the estimated cost of a job, through the real handler over the DynamoDB store and
cost records on moto. Every exchange is checked against openapi.yaml (tests/api/gateway.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from smq_lambda.adapters.dynamodb_costs import DynamoCostRecords
from smq_lambda.domain.costs.costs import AttemptCost

from tests.api.builders import ADMIN, ALICE, BOB, G5, P5, run, training_request
from tests.api.gateway import ApiGateway
from tests.support.fake_costs import StaticPriceSource
from tests.support.fakes import FakeClock, FakeConfigSource

EXPECTED = {"Key": "smq:expected-duration", "Value": "2h30m"}


def spent(name: str, usd: float | None, clock: FakeClock, *, days_ago: int = 0) -> AttemptCost:
    priced = usd is not None
    return AttemptCost(
        training_job_name=name,
        ended_at=clock() - timedelta(days=days_ago),
        spot=False,
        billable_s=3600,
        training_s=3600,
        spend_usd=usd,
        on_demand_equivalent_usd=usd,
        spot_savings_usd=0.0 if priced else None,
        waste_usd=0.0 if priced else None,
        idle_stop_avoided_usd=0.0 if priced else None,
    )


def figures(
    spend: float | None, attempts: int, *, unpriced: int = 0, accruing: float | None = 0.0, **more: Any
) -> dict:
    counted = {
        "spend_usd": spend,
        "on_demand_equivalent_usd": spend,
        "spot_savings_usd": None if spend is None else 0.0,
        "waste_usd": None if spend is None else 0.0,
        "idle_stop_avoided_usd": None if spend is None else 0.0,
        "attempts": attempts,
        "unpriced_attempts": unpriced,
        "accruing_usd": accruing,
        "running": 0,
        "unpriced_running": 0,
    }
    return {**counted, **more}


def groups(team: str, owner: str = ALICE, project: str = "(untagged)") -> dict[str, str]:
    return {"team": team, "owner": owner, "tag:project": project}


@pytest.fixture
def cost_tags(config: FakeConfigSource) -> None:
    config.config = replace(config.config, cost_tags=("project",))


def test_spend_by_team_sums_ended_attempts_and_what_running_jobs_accrue(
    api: ApiGateway, store: Any, clock: FakeClock, cost_records: DynamoCostRecords, prices: StaticPriceSource
) -> None:
    prices.prices = {G5: 2.0}
    cost_records.record(spent("vision-1", 12.5, clock), groups("vision"))
    cost_records.record(spent("vision-0", 100.0, clock, days_ago=45), groups("vision"))
    cost_records.record(spent("nlp-1", 30.0, clock), groups("nlp"))
    api.add(training_request("vision-run", instances=2))
    run(store, "vision-run", clock())
    clock.advance(minutes=30)

    reply = api.request("GET", "/costs", query={"since": "30d"})

    assert reply.status == 200
    assert reply.body == {
        "by": "team",
        "since": "2023-12-03T00:00:00.000Z",
        "until": "2024-01-01T00:30:01.000Z",
        "prices": {"source": "configuration"},
        "total": figures(42.5, 2, accruing=2.0, running=1),
        "groups": [
            {"group": "nlp", **figures(30.0, 1)},
            {"group": "vision", **figures(12.5, 1, accruing=2.0, running=1)},
        ],
    }


def test_the_default_range_is_the_current_utc_month(api: ApiGateway, clock: FakeClock) -> None:
    clock.advance(days=40, hours=5)

    reply = api.request("GET", "/costs")

    assert (reply.body["since"], reply.body["groups"]) == ("2024-02-01T00:00:00.000Z", [])


def test_a_group_with_only_unpriced_attempts_shows_no_dollars(
    api: ApiGateway, clock: FakeClock, cost_records: DynamoCostRecords
) -> None:
    cost_records.record(spent("p5-1", None, clock), groups("vision"))
    cost_records.record(spent("nlp-1", 3.0, clock), groups("nlp"))
    cost_records.record(spent("nlp-2", None, clock), groups("nlp"))

    body = api.request("GET", "/costs").body

    assert body["groups"] == [
        {"group": "nlp", **figures(3.0, 2, unpriced=1)},
        {"group": "vision", **figures(None, 1, unpriced=1)},
    ]
    assert body["total"] == figures(3.0, 3, unpriced=2)


def test_a_configured_cost_tag_is_a_dimension(
    api: ApiGateway, clock: FakeClock, cost_records: DynamoCostRecords, cost_tags: None
) -> None:
    cost_records.record(spent("a-1", 4.0, clock), groups("vision", project="apollo"))
    cost_records.record(spent("b-1", 1.0, clock), groups("nlp"))

    body = api.request("GET", "/costs", query={"by": "tag:project"}).body

    assert [(group["group"], group["spend_usd"]) for group in body["groups"]] == [("apollo", 4.0), ("(untagged)", 1.0)]
    assert body["by"] == "tag:project"


@pytest.mark.parametrize(
    ("caller", "owners"),
    [(ALICE, ["(other owners)", ALICE]), (BOB, [BOB, "(other owners)"]), (ADMIN, [BOB, ALICE])],
)
def test_by_owner_only_an_admin_sees_every_owner_and_everyone_the_whole_total(
    api: ApiGateway, clock: FakeClock, cost_records: DynamoCostRecords, caller: str, owners: list[str]
) -> None:
    cost_records.record(spent("a-1", 1.0, clock), groups("vision", owner=ALICE))
    cost_records.record(spent("b-1", 2.0, clock), groups("vision", owner=BOB))

    body = api.request("GET", "/costs", query={"by": "owner"}, caller=caller).body

    assert [group["group"] for group in body["groups"]] == owners
    assert body["total"]["spend_usd"] == 3.0


@pytest.mark.parametrize(
    ("query", "field", "rule"),
    [
        ({"by": "region"}, "by", "by must be team, owner or tag:<key>"),
        ({"by": "tag:"}, "by", "by must be team, owner or tag:<key>"),
        ({"by": "tag:team"}, "by", "'team' is not a configured cost tag; spend is kept by team, owner and tag:project"),
        ({"since": "30"}, "since", "since must be a number of days such as 30d"),
        ({"since": "0d"}, "since", "since must be a number of days such as 30d"),
        ({"since": "2h"}, "since", "since must be a number of days such as 30d"),
        ({"since": "2023-13-01"}, "since", "since must be a number of days such as 30d"),
        ({"since": "2023-12-01T00:00:00Z"}, "since", "since must be a number of days such as 30d"),
        ({"since": "401d"}, "since", "spend is kept for 400 days; the earliest day is 2022-11-28, not 2022-11-27"),
        ({"since": "2022-11-27"}, "since", "spend is kept for 400 days"),
        ({"since": "2024-01-02"}, "since", "2024-01-02 is after today (2024-01-01, UTC)"),
    ],
)
def test_each_bad_parameter_is_a_400_naming_it_and_changes_nothing(
    api: ApiGateway,
    clock: FakeClock,
    cost_records: DynamoCostRecords,
    dump_table: Callable[[], list[dict[str, Any]]],
    cost_tags: None,
    query: dict[str, str],
    field: str,
    rule: str,
) -> None:
    cost_records.record(spent("a-1", 1.0, clock), groups("vision"))
    before = dump_table()

    reply = api.request("GET", "/costs", query=query)

    assert (reply.status, reply.field) == (400, field)
    assert rule in reply.body["message"]
    assert dump_table() == before


@pytest.mark.parametrize(
    ("tags", "instance_type", "expected"),
    [
        ([EXPECTED], G5, {"usd": 10.0, "usd_per_hour": 4.0, "seconds": 9000, "ceiling": False}),
        ([], G5, {"usd": 4.0, "usd_per_hour": 4.0, "seconds": 3600, "ceiling": True}),
        ([EXPECTED], P5, None),
    ],
)
def test_a_job_shows_its_estimated_cost_when_submitted_and_described(
    api: ApiGateway, prices: StaticPriceSource, tags: list[dict[str, str]], instance_type: str, expected: Any
) -> None:
    prices.prices = {G5: 2.0}

    added = api.add(training_request("vit", instances=2, instance_type=instance_type, Tags=tags))
    described = api.get("vit")
    listed = api.list_jobs()

    assert added.body["estimated_cost"] == described.body["estimated_cost"] == expected
    assert listed.body["jobs"][0]["estimated_cost"] == expected


def test_the_estimate_uses_the_prices_in_force_when_read(api: ApiGateway, prices: StaticPriceSource) -> None:
    api.add(training_request("vit"))
    prices.prices = {G5: 1.5}

    assert api.get("vit").body["estimated_cost"] == {"usd": 1.5, "usd_per_hour": 1.5, "seconds": 3600, "ceiling": True}
