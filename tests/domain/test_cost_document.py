"""The configuration document's cost sections: prices, cost tags and budgets, every refusal naming
its key path."""

from __future__ import annotations

from typing import Any

import pytest
from smq_lambda.domain.config.config_document import ConfigDocumentError, ConfigWarning, parse_config_document
from smq_lambda.domain.costs.budgets import Budget, BudgetAction

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"


def document(**sections: Any) -> dict[str, Any]:
    return {"pools": {P5: 8}, **sections}


def budget(**members: Any) -> dict[str, Any]:
    return document(budgets={"vision": {"monthly_usd": 100, **members}})


def test_the_cost_sections_are_read_with_their_defaults() -> None:
    parsed = parse_config_document(
        document(
            prices={P5: 55.04, G5: 0},
            cost_tags=["project", "cost-center"],
            budgets={
                "vision": {"monthly_usd": 5000, "action": "hold", "warn_at": [0.5, 0.9, 1.2]},
                "nlp": {"monthly_usd": 1.5},
            },
        ),
        source="doc",
    )

    assert parsed.prices == {P5: 55.04, G5: 0.0}
    assert parsed.cost_tags == ("project", "cost-center")
    assert parsed.budgets == {
        "vision": Budget(monthly_usd=5000.0, action=BudgetAction.HOLD, warn_at=(0.5, 0.9, 1.2)),
        "nlp": Budget(monthly_usd=1.5, action=BudgetAction.WARN, warn_at=(0.8, 1.0)),
    }


@pytest.mark.parametrize("value", [document(), {G5: 2}, {}])
def test_a_document_without_cost_sections_has_no_prices_tags_or_budgets(value: dict[str, Any]) -> None:
    parsed = parse_config_document(value, source="doc")

    assert (parsed.prices, parsed.cost_tags, parsed.budgets) == ({}, (), {})


def test_a_cost_section_alone_makes_the_full_form_which_needs_pools() -> None:
    with pytest.raises(ConfigDocumentError, match="pools: is required"):
        parse_config_document({"prices": {G5: 1.0}}, source="doc")


REFUSALS = [
    (document(prices=[G5]), "prices", "must be a JSON object of instance type to $ per instance-hour"),
    (document(prices={" ": 1}), "prices", "an instance type is empty"),
    (document(prices={G5: -0.01}), f"prices.{G5}", "from 0 to 10000, not -0.01"),
    (document(prices={G5: 10_000.5}), f"prices.{G5}", "from 0 to 10000, not 10000.5"),
    (document(prices={G5: "1.41"}), f"prices.{G5}", "not '1.41'"),
    (document(prices={G5: True}), f"prices.{G5}", "not True"),
    (document(prices={G5: None}), f"prices.{G5}", "not None"),
    (document(prices={G5: float("nan")}), f"prices.{G5}", "not nan"),
    (document(prices={G5: float("inf")}), f"prices.{G5}", "not inf"),
    (document(cost_tags="project"), "cost_tags", "must be a JSON array of at most 10 tag keys"),
    (document(cost_tags=[f"t{index}" for index in range(11)]), "cost_tags", "at most 10 tag keys"),
    (document(cost_tags=["project", ""]), "cost_tags[1]", "must be a tag key of 1 to 128 characters"),
    (document(cost_tags=[7]), "cost_tags[0]", "must be a tag key of 1 to 128 characters, not 7"),
    (document(cost_tags=["aws:project"]), "cost_tags[0]", "reserved for AWS"),
    (document(cost_tags=["pro ject!"]), "cost_tags[0]", "letters, digits, spaces and _.:/=+-@ only"),
    (document(cost_tags=["project", "team", "project"]), "cost_tags[2]", "'project' is listed twice"),
    (document(budgets=[]), "budgets", "must be a JSON object of team name to budget"),
    (document(budgets={"": {"monthly_usd": 1}}), 'budgets.""', "a team name is a tag value: 1 to 256 characters"),
    (document(budgets={"(unassigned)": {"monthly_usd": 1}}), "budgets.(unassigned)", "is the group of jobs of no team"),
    (document(budgets={"vision!": {"monthly_usd": 1}}), "budgets.vision!", "a team name is a tag value"),
    (document(budgets={"vision": 100}), "budgets.vision", "must be a JSON object with monthly_usd, action and warn_at"),
    (document(budgets={"vision": {}}), "budgets.vision.monthly_usd", "is required"),
    (budget(monthly_usd=0), "budgets.vision.monthly_usd", "above 0, at most 1000000000, not 0"),
    (budget(monthly_usd=-5), "budgets.vision.monthly_usd", "above 0"),
    (budget(monthly_usd="100"), "budgets.vision.monthly_usd", "not '100'"),
    (budget(monthly_usd=1e10), "budgets.vision.monthly_usd", "at most 1000000000"),
    (budget(action="stop"), "budgets.vision.action", "'stop' is not one of hold, warn"),
    (budget(limit=3), "budgets.vision.limit", "unknown key; budgets.vision has monthly_usd, action, warn_at"),
    (budget(warn_at=0.8), "budgets.vision.warn_at", "must be a JSON array of 1 to 10 ascending shares"),
    (budget(warn_at=[]), "budgets.vision.warn_at", "must be a JSON array of 1 to 10 ascending shares"),
    (budget(warn_at=[0.1 * index for index in range(1, 12)]), "budgets.vision.warn_at", "1 to 10"),
    (budget(warn_at=[0.8, 0]), "budgets.vision.warn_at[1]", "a share of the budget in (0, 10], not 0"),
    (budget(warn_at=[10.5]), "budgets.vision.warn_at[0]", "not 10.5"),
    (budget(warn_at=[0.8, "1.0"]), "budgets.vision.warn_at[1]", "not '1.0'"),
    (budget(warn_at=[1.0, 0.8]), "budgets.vision.warn_at[1]", "must be above the share before it (1.0)"),
    (budget(warn_at=[0.8, 0.8]), "budgets.vision.warn_at[1]", "must be above the share before it"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "path", "complaint"), REFUSALS)
def test_a_malformed_cost_section_is_refused_naming_the_key(value: dict[str, Any], path: str, complaint: str) -> None:
    with pytest.raises(ConfigDocumentError) as raised:
        parse_config_document(value, source="doc")

    assert raised.value.path == path
    assert complaint in raised.value.problem


QUOTAS = {"vision": {"instances": {P5: 4}}, "nlp": {"instances": {P5: 2}}}


def test_with_quotas_a_budget_for_a_team_no_job_can_name_is_kept_and_warned_of() -> None:
    parsed = parse_config_document(
        document(
            quotas=QUOTAS, budgets={"visoin": {"monthly_usd": 100, "action": "hold"}, "vision": {"monthly_usd": 5}}
        ),
        source="doc",
    )

    assert set(parsed.budgets) == {"visoin", "vision"}
    assert parsed.warnings == (
        ConfigWarning(
            "budgets.visoin",
            "'visoin' is not a configured team: with quotas, a job's team tag must name one of 'nlp', 'vision', so no "
            "new job counts against this budget (only jobs queued while 'visoin' was a team do)",
        ),
    )
    assert str(parsed.warnings[0]).startswith("budgets.visoin: 'visoin' is not a configured team")


@pytest.mark.parametrize(
    "value",
    [
        document(budgets={"anyone": {"monthly_usd": 100}}),
        document(quotas=QUOTAS, budgets={"nlp": {"monthly_usd": 100}}),
        {G5: 2},
    ],
    ids=["no quotas: any team tag value is a team", "a configured team", "the flat form"],
)
def test_a_budget_any_job_can_count_against_is_not_warned_of(value: dict[str, Any]) -> None:
    assert parse_config_document(value, source="doc").warnings == ()
