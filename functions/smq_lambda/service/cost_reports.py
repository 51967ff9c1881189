"""GET /costs: what the queue's jobs spent, grouped by team, owner or a configured cost tag.

Spend is what ended attempts cost, as the cost records kept it when each ended, summed over
whole UTC days: a report reads one aggregate per day asked for, whatever the number of jobs, so it
costs what its answer holds, not what the table holds. Beside it, what the running jobs have
accrued since their attempts started (`accruing_usd`): an estimate, priced on demand, that the
cost records replace with SageMaker's billed time once each attempt ends.

Who sees what: everyone the API admits reads spend by team and by tag (quotas and the queue are
public to them too); by owner, a caller reads apart only the rows of owners whose jobs they may
change (their own, or their role's under an `"owner": "role"` rule), and an admin every row; the
other owners' rows are summed in one, OTHER_OWNERS, which tells no owner apart (their sum is the
public total less what the caller sees anyway). So every grouping adds up to the same `total`, and
a caller with no row of their own is shown what they may not see, never told there is no spend.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from smq_lambda.domain.access.access import UNRESTRICTED, AccessPolicy
from smq_lambda.domain.costs.budgets import month_start
from smq_lambda.domain.costs.cost_totals import (
    OTHER_OWNERS,
    SPEND_KEPT_DAYS,
    TAG_DIMENSION_PREFIX,
    CostFigures,
    cost_groups,
)
from smq_lambda.domain.costs.costs import Prices, accrued_cost
from smq_lambda.domain.jobs.model import Job
from smq_lambda.errors import InvalidRequest
from smq_lambda.ports import ConfigSource, CostRecords, JobStore, PriceSource
from smq_lambda.service.queue_api import AccessRulesSource

OWNER = "owner"


@dataclass(frozen=True)
class DaysBack:
    """`since=30d`: the last `days` UTC days, today included."""

    days: int


@dataclass(frozen=True)
class Accrual:
    """What one group's running jobs have cost so far. `usd` counts the priced ones only."""

    usd: float = 0.0
    running: int = 0
    unpriced_running: int = 0

    def plus(self, other: Accrual) -> Accrual:
        return Accrual(
            self.usd + other.usd, self.running + other.running, self.unpriced_running + other.unpriced_running
        )

    @classmethod
    def of(cls, accrued_usd: float | None) -> Accrual:
        return cls(running=1, unpriced_running=1) if accrued_usd is None else cls(usd=accrued_usd, running=1)


@dataclass(frozen=True)
class CostRow:
    """One group of a report (or its total): the cost records' figures for its ended attempts, and what
    its running jobs accrue."""

    group: str
    ended: CostFigures
    accruing: Accrual

    @property
    def sort_key(self) -> tuple[float, str]:
        return (-self.ended.spend_usd, self.group)


@dataclass(frozen=True)
class CostReport:
    by: str
    since: datetime
    """00:00 UTC of the first day counted."""
    until: datetime
    """When the report was made: the last day counted is this one's."""
    prices_source: str
    """Where the prices in force come from (the accruals are priced with them)."""
    total: CostRow
    groups: list[CostRow]
    """By spend, highest first (then by name)."""


class CostReports:
    """The reports over the cost records and the live jobs; dependencies injected, as QueueService's."""

    def __init__(
        self,
        records: CostRecords,
        store: JobStore,
        config: ConfigSource,
        prices: PriceSource,
        *,
        admin_principals: Collection[str] = frozenset(),
        access_rules: AccessRulesSource | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """`admin_principals` and `access_rules` as QueueService's: who may read every owner's row."""
        self._records = records
        self._store = store
        self._config = config
        self._prices = prices
        self._admins = tuple(admin_principals)
        self._access_rules = access_rules
        self._clock = clock

    def report(self, by: str, since: date | DaysBack | None, caller: str) -> CostReport:
        """Spend per group of `by` from `since` (a first UTC day, or a number of days back; None: the
        current UTC month) through today. A `tag:` dimension must name a configured cost tag and
        `since` lie within SPEND_KEPT_DAYS (InvalidRequest otherwise, before anything is read)."""
        now = self._clock()
        cost_tags = self._config.load().cost_tags
        check_dimension(by, cost_tags)
        days = report_days(since, now)
        ended = self._records.totals(by, days)
        prices = self._prices.in_force()
        accruing = group_accruals(self._store.in_use().live, by, cost_tags, now, prices.prices)
        rows = [
            CostRow(group, ended.get(group, CostFigures()), accruing.get(group, Accrual()))
            for group in ended.keys() | accruing.keys()
        ]
        if by == OWNER:
            access = AccessPolicy(self._admins, self._access_rules.load() if self._access_rules else UNRESTRICTED)
            rows = visible_owners(rows, lambda owner: access.may_change(owner, caller))
        return CostReport(
            by=by,
            since=datetime.combine(days[0], time(), tzinfo=UTC),
            until=now,
            prices_source=prices.source,
            total=total_row(rows),
            groups=sorted(rows, key=lambda row: row.sort_key),
        )


def group_accruals(
    live: Iterable[Job], by: str, cost_tags: Collection[str], now: datetime, prices: Prices
) -> dict[str, Accrual]:
    """Per group of `by`, what the live jobs (read by key: one read per live job) have accrued."""
    accruals: dict[str, Accrual] = {}
    for job in live:
        group = cost_groups(job, cost_tags)[by]
        accruals[group] = accruals.get(group, Accrual()).plus(Accrual.of(accrued_cost(job, now, prices)))
    return accruals


def visible_owners(rows: Iterable[CostRow], may_see: Callable[[str], bool]) -> list[CostRow]:
    """The owners' rows `may_see` allows, and the rest summed in one OTHER_OWNERS row (if any)."""
    shown: list[CostRow] = []
    hidden: list[CostRow] = []
    for row in rows:
        (shown if may_see(row.group) else hidden).append(row)
    return [*shown, total_row(hidden, OTHER_OWNERS)] if hidden else shown


def total_row(rows: Iterable[CostRow], group: str = "total") -> CostRow:
    ended, accruing = CostFigures(), Accrual()
    for row in rows:
        ended, accruing = ended.plus(row.ended), accruing.plus(row.accruing)
    return CostRow(group, ended, accruing)


def check_dimension(by: str, cost_tags: Collection[str]) -> None:
    """A `tag:<key>` dimension is one the cost records aggregate: a configured cost tag."""
    key = by.removeprefix(TAG_DIMENSION_PREFIX)
    if by.startswith(TAG_DIMENSION_PREFIX) and key not in cost_tags:
        configured = ", ".join(f"{TAG_DIMENSION_PREFIX}{tag}" for tag in cost_tags) or "none"
        raise InvalidRequest(
            "by", f"by: {key!r} is not a configured cost tag; spend is kept by team, owner and {configured}"
        )


def report_days(since: date | DaysBack | None, now: datetime) -> list[date]:
    """The UTC days a report sums, oldest first: from `since` through `now`'s day."""
    today = now.astimezone(UTC).date()
    if since is None:
        first = month_start(now).date()
    elif isinstance(since, DaysBack):
        first = today - timedelta(days=since.days - 1)
    else:
        first = since
    earliest = today - timedelta(days=SPEND_KEPT_DAYS - 1)
    if first > today:
        raise InvalidRequest("since", f"since: {first.isoformat()} is after today ({today.isoformat()}, UTC)")
    if first < earliest:
        raise InvalidRequest(
            "since",
            f"since: spend is kept for {SPEND_KEPT_DAYS} days; the earliest day is {earliest.isoformat()}, "
            f"not {first.isoformat()}",
        )
    return [first + timedelta(days=offset) for offset in range((today - first).days + 1)]
