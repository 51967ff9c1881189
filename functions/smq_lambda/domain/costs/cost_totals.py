"""What attempts cost, added up: the figures a cost report shows per group, and the groups (team,
owner, configured tags) one job's spend counts under. Pure.

Figures only ever add ended attempts, each exactly once (the cost records see to that), so a total is
never negative; an unpriced attempt adds no dollars and counts in `unpriced_attempts`, so a
report can say how much it could not price instead of showing it as free.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from smq_lambda.domain.config.teams import UNASSIGNED
from smq_lambda.domain.costs.costs import AttemptCost
from smq_lambda.domain.jobs.model import Job, tag_value

UNTAGGED = "(untagged)"
"""The group of a `tag:<key>` dimension for jobs without that tag."""
OTHER = "(other)"
"""The group of a `tag:<key>` dimension that takes a day's values past MAX_TAG_GROUPS_PER_DAY.
Neither name can be a tag's value: AWS tags allow no parentheses."""
OTHER_OWNERS = "(other owners)"
"""The group of the `owner` dimension that sums the owners a caller may not see apart (only an
admin sees each): no owner's name, an ARN holds no parentheses."""
MAX_TAG_GROUPS_PER_DAY = 200
"""Distinct values of one cost tag the cost records keep apart per UTC day; later ones count in OTHER, so
that a tag with a value per run never fills a day's item (adapters/dynamodb_costs.py)."""
ELLIPSIS = "…"
MAX_TAG_GROUP_BYTES = 128
"""The longest cost tag group in UTF-8 (what DynamoDB counts): a longer value (tags allow 256
characters, of up to 4 bytes each) is cut, ending in '…'."""
SPEND_KEPT_DAYS = 400
"""How long recorded spend is kept (the cost records' items expire that long after their day), and so how
far back a cost report may reach: an older day could be partly forgotten."""
TAG_DIMENSION_PREFIX = "tag:"


@dataclass(frozen=True)
class CostFigures:
    """Dollars and attempts summed over the ended attempts of one group."""

    spend_usd: float = 0.0
    on_demand_equivalent_usd: float = 0.0
    spot_savings_usd: float = 0.0
    waste_usd: float = 0.0
    idle_stop_avoided_usd: float = 0.0
    attempts: int = 0
    unpriced_attempts: int = 0

    def plus(self, other: CostFigures) -> CostFigures:
        return CostFigures(
            spend_usd=self.spend_usd + other.spend_usd,
            on_demand_equivalent_usd=self.on_demand_equivalent_usd + other.on_demand_equivalent_usd,
            spot_savings_usd=self.spot_savings_usd + other.spot_savings_usd,
            waste_usd=self.waste_usd + other.waste_usd,
            idle_stop_avoided_usd=self.idle_stop_avoided_usd + other.idle_stop_avoided_usd,
            attempts=self.attempts + other.attempts,
            unpriced_attempts=self.unpriced_attempts + other.unpriced_attempts,
        )

    @classmethod
    def of(cls, cost: AttemptCost) -> CostFigures:
        """One ended attempt's figures; an unpriced one adds no dollars, only its count."""
        if cost.spend_usd is None:
            return cls(attempts=1, unpriced_attempts=1)
        return cls(
            spend_usd=cost.spend_usd,
            on_demand_equivalent_usd=cost.on_demand_equivalent_usd or 0.0,
            spot_savings_usd=cost.spot_savings_usd or 0.0,
            waste_usd=cost.waste_usd or 0.0,
            idle_stop_avoided_usd=cost.idle_stop_avoided_usd or 0.0,
            attempts=1,
        )


def cost_groups(job: Job, cost_tags: Collection[str]) -> dict[str, str]:
    """Dimension → group that `job`'s spend counts under: its team tag's value (UNASSIGNED, as in
    GET /quotas, without one; a team with no quota keeps its name: spend is not scheduling), its
    owner, and its value of each configured cost tag (`tag:<key>`, cut by `tag_group`)."""
    groups = {"team": job.team or UNASSIGNED, "owner": job.owner}
    for key in cost_tags:
        groups[f"{TAG_DIMENSION_PREFIX}{key}"] = tag_group(tag_value(job.request, key) or UNTAGGED)
    return groups


def tag_group(value: str) -> str:
    """A cost tag's value as its group: at most MAX_TAG_GROUP_BYTES, a longer one cut between two
    characters to end in '…' (which no tag value holds, so a cut value is never another's whole
    one). Cutting a group again changes nothing."""
    encoded = value.encode()
    if len(encoded) <= MAX_TAG_GROUP_BYTES:
        return value
    kept = encoded[: MAX_TAG_GROUP_BYTES - len(ELLIPSIS.encode())].decode(errors="ignore")
    return f"{kept}{ELLIPSIS}"
