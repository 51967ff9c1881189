"""GET /quotas: each team's share of each pool, as the last pass measured it, and its pending jobs now.

What the pass measured is the instances each group held (`TeamMeasure.in_use`). Quota, borrowed
and lent are derived from it under the configuration in force now (service/team_measures.py), as
GET /pools shows capacities configured now: a quota changed since the pass shows at once, and the
rows always agree with each other. A team no longer configured counts in the unassigned group.

Pending jobs are counted when asked, one Select=COUNT Query of the pending indexes per pool, then
per configured team of a pool that has any (`JobStore.count_pending(pool, team=...)`). The
unassigned group's are the pool's pending jobs less the configured teams' (jobs with no team tag,
or a tag that names no configured team); the indexes may lag writes a moment, so never below 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.config.teams import UNASSIGNED, Sharing
from smq_lambda.pass_summary import PassSummary, TeamMeasure
from smq_lambda.ports import JobStore
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.service.team_measures import GroupPool, Waiting, team_measures


@dataclass(frozen=True)
class TeamQuota:
    """One row of GET /quotas: the team's measure (`pending` counted when asked), and how it shares."""

    measure: TeamMeasure
    sharing: Sharing
    borrow_limit: int | None


@dataclass(frozen=True)
class CurrentQuotas:
    teams: list[TeamQuota]
    """Empty when no quota is configured."""
    team_tag: str
    """The tag whose value is a job's team."""
    measured_at: datetime | None
    """When the pass measured `in_use`; None when it was counted from the table when asked."""


def current_quotas(
    summary: PassSummary,
    pools: dict[str, int | None],
    config: SchedulerConfig,
    store: JobStore,
    measured_at: datetime | None,
) -> CurrentQuotas:
    """The rows for `pools` (pool → capacity now, in the order to show) from what `summary` measured."""
    teams = config.teams
    if not teams.enabled:
        return CurrentQuotas(teams=[], team_tag=teams.tag, measured_at=measured_at)
    held: dict[GroupPool, int] = {}
    for measure in summary.teams:
        key = (teams.team_of(measure.team), measure.pool)
        held[key] = held.get(key, 0) + measure.in_use
    pending = {key: Waiting(count) for pool in pools for key, count in pending_by_group(store, pool, config).items()}
    rows = [
        TeamQuota(
            measure=measure,
            sharing=teams.sharing(measure.team),
            borrow_limit=teams.borrow_limit(measure.team) if teams.sharing(measure.team).borrows else 0,
        )
        for measure in team_measures(pools, teams, held, pending)
    ]
    return CurrentQuotas(teams=rows, team_tag=teams.tag, measured_at=measured_at)


def pending_by_group(store: JobStore, pool: str, config: SchedulerConfig) -> dict[GroupPool, int]:
    """Pending jobs listed under `pool` per group, counted now; nothing more is asked of an idle pool."""
    total = store.count_pending(pool)
    if total == 0:
        return {}
    counts = {(team, pool): store.count_pending(pool, team=team) for team in sorted(config.teams.quotas)}
    counts[(UNASSIGNED, pool)] = max(total - sum(counts.values()), 0)
    return {key: count for key, count in counts.items() if count}
