"""A team's monthly spend budget, as the configuration document's `budgets` section declares it.

Months are UTC calendar months: a budget's spend starts again at 00:00 UTC on the first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum

BUDGET_OVERRIDE_TAG = "smq:budget-override"
"""A job tagged `smq:budget-override` = `true` starts whatever its team's `hold` budget says. Only
an admin may submit it (the submission rules refuse it from anyone else)."""
BUDGET_OVERRIDE_VALUE = "true"


class BudgetAction(StrEnum):
    HOLD = "hold"
    """A team's job starts only while the month's spend, what its running jobs accrue and the job's
    own estimate stay within the budget. Running jobs are never stopped for a budget."""
    WARN = "warn"
    """Jobs start as usual; the team's owners are told at each threshold of `warn_at`."""


DEFAULT_WARN_AT = (0.8, 1.0)


@dataclass(frozen=True)
class Budget:
    monthly_usd: float
    action: BudgetAction = BudgetAction.WARN
    warn_at: tuple[float, ...] = DEFAULT_WARN_AT
    """Shares of `monthly_usd`, ascending, at which the team hears of its spend."""


def month_start(now: datetime) -> datetime:
    """00:00 UTC on the first of `now`'s month: where the month's spend starts."""
    utc = now.astimezone(UTC)
    return datetime(utc.year, utc.month, 1, tzinfo=UTC)


def next_month_start(now: datetime) -> datetime:
    """When a budget's spend starts again."""
    start = month_start(now)
    return datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=UTC)


def month_days(now: datetime) -> list[date]:
    """The UTC days of `now`'s month so far, today included: the days its spend was recorded on."""
    first = month_start(now).date()
    return [first + timedelta(days=offset) for offset in range((now.astimezone(UTC).date() - first).days + 1)]


def holds_any(budgets: Mapping[str, Budget]) -> bool:
    """Some team's budget holds its jobs: only then does a pass need the teams' spend."""
    return any(budget.action is BudgetAction.HOLD for budget in budgets.values())
