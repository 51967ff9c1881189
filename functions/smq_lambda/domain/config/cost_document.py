"""The cost sections of the configuration document (see config_document.py for the whole):

    "prices": {"ml.g5.xlarge": 1.41},          instance type → on-demand $ per instance-hour
    "cost_tags": ["project"],                  tag keys cost reports may group by (`tag:project`)
    "budgets": {"vision": {"monthly_usd": 5000, "action": "hold", "warn_at": [0.8, 1.0]}}

A price is a number from 0 to MAX_PRICE_USD (its own prices override the shipped and refreshed
ones; a type with none is unpriced, never free). At most MAX_COST_TAGS distinct cost tags, each a
tag key as `team_tag` is. A budget's team is named as a quota's team is; `monthly_usd` is a number
above 0 and at most MAX_BUDGET_USD; `action` is hold or warn (default warn); `warn_at` is 1 to
MAX_WARN_AT strictly ascending shares of the budget in (0, MAX_WARN_SHARE] (default [0.8, 1.0]).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from smq_lambda.domain.config.section_parser import SectionParser
from smq_lambda.domain.costs.budgets import DEFAULT_WARN_AT, Budget, BudgetAction
from smq_lambda.domain.costs.costs import Prices

COST_KEYS = ("prices", "cost_tags", "budgets")
BUDGET_KEYS = ("monthly_usd", "action", "warn_at")
MAX_PRICE_USD = 10_000
"""Per instance-hour: far above any SageMaker training price (the largest are near $100)."""
MAX_COST_TAGS = 10
"""Each cost tag is one more group per day item and per recorded attempt (see dynamodb_costs.py)."""
MAX_BUDGET_USD = 1_000_000_000
MAX_WARN_AT = 10
MAX_WARN_SHARE = 10


@dataclass(frozen=True)
class CostSections:
    prices: Prices = field(default_factory=dict)
    cost_tags: tuple[str, ...] = ()
    budgets: Mapping[str, Budget] = field(default_factory=dict)


def parse_cost_sections(document: Mapping[str, Any], parser: SectionParser) -> CostSections:
    """The cost sections of the full-form `document`, each absent one empty."""
    return CostSections(
        prices=_prices(document.get("prices", {}), parser),
        cost_tags=_cost_tags(document.get("cost_tags", []), parser),
        budgets=_budgets(document.get("budgets", {}), parser),
    )


def _prices(value: Any, parser: SectionParser) -> dict[str, float]:
    prices: dict[str, float] = {}
    for instance_type, price in parser.section(value, "prices", "of instance type to $ per instance-hour").items():
        if not instance_type.strip():
            raise parser.fail("prices", "an instance type is empty")
        prices[instance_type] = parser.number(
            price,
            f"prices.{instance_type}",
            maximum=MAX_PRICE_USD,
            what=f"a number of US dollars per instance-hour from 0 to {MAX_PRICE_USD}",
        )
    return prices


def _cost_tags(value: Any, parser: SectionParser) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_COST_TAGS:
        raise parser.fail("cost_tags", f"must be a JSON array of at most {MAX_COST_TAGS} tag keys, not {value!r}")
    keys = tuple(parser.tag_key(key, f"cost_tags[{index}]") for index, key in enumerate(value))
    for index, key in enumerate(keys):
        if key in keys[:index]:
            raise parser.fail(f"cost_tags[{index}]", f"{key!r} is listed twice")
    return keys


def _budgets(value: Any, parser: SectionParser) -> dict[str, Budget]:
    budgets: dict[str, Budget] = {}
    for team, member in parser.section(value, "budgets", "of team name to budget").items():
        parser.team_name(team, section="budgets")
        budgets[team] = _budget(member, f"budgets.{team}", parser)
    return budgets


def _budget(value: Any, path: str, parser: SectionParser) -> Budget:
    members = parser.section(value, path, "with monthly_usd, action and warn_at")
    parser.known(members, path, BUDGET_KEYS)
    if "monthly_usd" not in members:
        raise parser.fail(f"{path}.monthly_usd", "is required: the team's spend per UTC calendar month in US dollars")
    monthly_usd = parser.number(
        members["monthly_usd"],
        f"{path}.monthly_usd",
        above_minimum=True,
        maximum=MAX_BUDGET_USD,
        what=f"a number of US dollars above 0, at most {MAX_BUDGET_USD}",
    )
    action = members.get("action", BudgetAction.WARN.value)
    actions = [choice.value for choice in BudgetAction]
    if action not in actions:
        raise parser.fail(f"{path}.action", f"{action!r} is not one of {', '.join(actions)}")
    return Budget(
        monthly_usd=monthly_usd,
        action=BudgetAction(action),
        warn_at=_warn_at(members.get("warn_at", list(DEFAULT_WARN_AT)), f"{path}.warn_at", parser),
    )


def _warn_at(value: Any, path: str, parser: SectionParser) -> tuple[float, ...]:
    shape = f"a JSON array of 1 to {MAX_WARN_AT} ascending shares of the budget in (0, {MAX_WARN_SHARE}]"
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_WARN_AT:
        raise parser.fail(path, f"must be {shape}, not {value!r}")
    shares: list[float] = []
    for index, share in enumerate(value):
        shares.append(
            parser.number(
                share,
                f"{path}[{index}]",
                above_minimum=True,
                maximum=MAX_WARN_SHARE,
                what=f"a share of the budget in (0, {MAX_WARN_SHARE}]",
            )
        )
        if index and shares[index] <= shares[index - 1]:
            raise parser.fail(f"{path}[{index}]", f"must be above the share before it ({shares[index - 1]})")
    return tuple(shares)
