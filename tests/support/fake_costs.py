"""The cost ports in memory: the CostRecords with the DynamoDB adapter's semantics (see
dynamodb_costs.py: each attempt counts once, under every group, on the UTC day it ended; a tag's
groups are cut to MAX_TAG_GROUP_BYTES, and a day keeps MAX_TAG_GROUPS_PER_DAY of them apart, the
later ones counting in OTHER)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, date

from smq_lambda.domain.costs.cost_totals import (
    MAX_TAG_GROUPS_PER_DAY,
    OTHER,
    TAG_DIMENSION_PREFIX,
    CostFigures,
    tag_group,
)
from smq_lambda.domain.costs.costs import AttemptCost, Prices
from smq_lambda.domain.costs.prices_in_force import PriceOrigin, PricesInForce
from smq_lambda.errors import ServiceUnavailable


class InMemoryCostRecords:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.recorded: dict[str, AttemptCost] = {}
        """Each recorded attempt's cost, by training job name."""
        self.groups: dict[str, dict[str, str]] = {}
        """Each recorded attempt's groups, by training job name."""
        self._days: dict[tuple[date, str, str], CostFigures] = {}
        self.unavailable = False
        """Set to make every call raise ServiceUnavailable, as a throttled table does."""

    def record(self, cost: AttemptCost, groups: Mapping[str, str]) -> bool:
        self._check_available()
        day = cost.ended_at.astimezone(UTC).date()
        with self._lock:
            if cost.training_job_name in self.recorded:
                return False
            self.recorded[cost.training_job_name] = cost
            self.groups[cost.training_job_name] = dict(groups)
            for dimension, group in groups.items():
                key = (day, dimension, self._kept_apart(day, dimension, group))
                self._days[key] = self._days.get(key, CostFigures()).plus(CostFigures.of(cost))
            return True

    def _kept_apart(self, day: date, dimension: str, group: str) -> str:
        """The group `group` counts in on `day`: OTHER for a tag's new group past the day's limit."""
        if not dimension.startswith(TAG_DIMENSION_PREFIX):
            return group
        group = tag_group(group)
        named = {
            kept for kept_day, kept_dimension, kept in self._days if (kept_day, kept_dimension) == (day, dimension)
        }
        named.discard(OTHER)
        return group if group in named or len(named) < MAX_TAG_GROUPS_PER_DAY else OTHER

    def totals(self, dimension: str, days: Sequence[date]) -> dict[str, CostFigures]:
        self._check_available()
        wanted = set(days)
        result: dict[str, CostFigures] = {}
        with self._lock:
            for (day, kept_dimension, group), figures in self._days.items():
                if day in wanted and kept_dimension == dimension:
                    result[group] = result.get(group, CostFigures()).plus(figures)
        return result

    def _check_available(self) -> None:
        if self.unavailable:
            raise ServiceUnavailable("DynamoDB", "ThrottlingException", "throttled (fake)")


class StaticPriceSource:
    """The PriceSource port over fixed prices, all of them from the configuration document."""

    def __init__(self, prices: Prices | None = None) -> None:
        self.prices: dict[str, float] = dict(prices or {})
        """Change it to change the prices in force."""

    def load(self) -> Prices:
        return dict(self.prices)

    def in_force(self) -> PricesInForce:
        return PricesInForce(dict(self.prices), dict.fromkeys(self.prices, PriceOrigin.CONFIGURATION))
