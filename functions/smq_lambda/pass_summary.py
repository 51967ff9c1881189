"""The pass summary: what a scheduling pass measured, per pool and per team, as GET /pools, GET
/quotas and the metrics read it, with its start estimates and the jobs it explained; the pass
publishes it (ports.PassSummaries) and the API reads it back (service/pass_summary_reader.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from smq_lambda.forecast.start_estimate import GivenEstimate, StartEstimate


@dataclass(frozen=True)
class PoolMeasure:
    """One pool as a scheduling pass left it."""

    pool: str
    capacity: int | None
    """None: an instance type with no pool while unpooled types are unlimited."""
    in_use: int
    """Instances held by live queue jobs, training jobs started outside the queue and warm pools."""
    head: str | None = None
    """The first job that waits for the pool, if one does."""
    warm: int = 0
    """Of `in_use`, the instances warm pools hold (domain/warm/warm_pools.py)."""


@dataclass(frozen=True)
class PoolUsage:
    """One pool as GET /pools shows it: what the last pass measured, and the pending jobs now."""

    pool: str
    capacity: int | None
    in_use: int
    pending: int
    head: str | None = None
    warm: int = 0


@dataclass(frozen=True)
class TeamMeasure:
    """One team in one pool as a scheduling pass left it (the unassigned group is a team here)."""

    team: str
    pool: str
    quota: int | None
    in_use: int
    """Instances its live jobs hold."""
    borrowed: int
    """Instances it holds beyond its quota: max(in_use - quota, 0)."""
    lent: int
    """Instances of its idle quota that other teams' jobs run on (see service/team_measures.py)."""
    pending: int = 0
    """Its pending jobs listed under the pool that the pass saw: capped by the front the pass read, so a
    lower bound (GET /quotas counts them when asked)."""
    longest_wait_s: float | None = None
    """The longest wait among those jobs (from submission, or from the end of the last attempt);
    None when the pass saw none."""


@dataclass(frozen=True)
class PassSummary:
    """What one scheduling pass measured, per pool and team, and when; its start estimates and the
    jobs it held or explained."""

    pools: tuple[PoolMeasure, ...]
    measured_at: datetime
    teams: tuple[TeamMeasure, ...] = ()
    estimates: Mapping[str, StartEstimate] = field(default_factory=dict)
    """Per pending job the pass saw (its fronts), keyed by job name."""
    first_estimates: Mapping[str, GivenEstimate] = field(default_factory=dict)
    """Per pending job the pass estimated, the first estimate any pass gave it since it last waited
    (keyed by job name): what a start is measured against."""
    budget_held: frozenset[str] = frozenset()
    """The pending jobs the pass held for their team's budget (their stored reason says why)."""
    explained: frozenset[str] | None = None
    """The jobs whose reason the pass wrote or found current (`Decision.explained`); None in a
    summary written before passes published it."""
    spot_rates: Mapping[str, float] = field(default_factory=dict)
    """Per instance type, the spot interruptions per hour the pass decided with (adaptive spot only)."""


@dataclass(frozen=True)
class TeamUsageRecord:
    """Each team's decayed past use in instance-seconds (see `domain.config.teams.decay_usage`), as of
    `at`, the end of the pass that wrote it."""

    usage: Mapping[str, float]
    at: datetime
