"""What one scheduling pass decides over: a frozen view of the queue and of the pools."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from smq_lambda.domain.model import Job
from smq_lambda.domain.teams import Aging, PreemptionRules, Teams


class UnpooledPolicy(StrEnum):
    """What happens to an instance type that has no configured pool."""

    REJECT = "reject"
    UNLIMITED = "unlimited"


@dataclass(frozen=True)
class SchedulerConfig:
    """Settings of a pass. `pools`, `teams`, `preemption` and `aging` come from the configuration
    document, hot-reloaded from SSM; the defaults are the queue without teams."""

    pools: Mapping[str, int]
    unpooled: UnpooledPolicy = UnpooledPolicy.REJECT
    backfill: bool = False
    teams: Teams = field(default_factory=Teams)
    preemption: PreemptionRules = field(default_factory=PreemptionRules)
    aging: Aging = field(default_factory=Aging)

    def capacity(self, pool: str) -> int | None:
        """Instances the pool holds; `None` means unlimited (an unpooled type under `unlimited`)."""
        if pool in self.pools:
            return self.pools[pool]
        return None if self.unpooled is UnpooledPolicy.UNLIMITED else 0


@dataclass(frozen=True)
class Snapshot:
    """The active jobs of the queue and the instances SageMaker jobs outside the queue hold.

    `jobs` holds every job that is pending or live; finished jobs play no part in a pass.
    """

    jobs: tuple[Job, ...]
    external_usage: Mapping[str, int] = field(default_factory=dict)
    team_usage: Mapping[str, float] = field(default_factory=dict)
    """Each team's decayed past use in instance-seconds (see `domain.teams.decayed_usage`): the
    fair share among teams that want to borrow."""
