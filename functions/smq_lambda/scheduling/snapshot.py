"""What one scheduling pass decides over: a frozen view of the queue and of the pools."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum

from smq_lambda.domain.config.config_document import QueueConfigDocument
from smq_lambda.domain.costs.costs import Prices
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.warm.warm_pools import WarmPool


class UnpooledPolicy(StrEnum):
    """What happens to an instance type that has no configured pool."""

    REJECT = "reject"
    UNLIMITED = "unlimited"


@dataclass(frozen=True)
class SchedulerConfig(QueueConfigDocument):
    """What a pass reads: the configuration document itself (pools, teams, preemption and aging
    rules; hot-reloaded from SSM) and the two deployment settings beside it. The defaults are the
    queue without teams."""

    unpooled: UnpooledPolicy = UnpooledPolicy.REJECT
    backfill: bool = False

    @classmethod
    def of(
        cls, document: QueueConfigDocument, *, unpooled: UnpooledPolicy = UnpooledPolicy.REJECT, backfill: bool = False
    ) -> SchedulerConfig:
        """`document` as a pass reads it, with the deployment settings."""
        parsed = {part.name: getattr(document, part.name) for part in fields(document)}
        return cls(**parsed, unpooled=unpooled, backfill=backfill)

    def capacity(self, pool: str) -> int | None:
        """Instances the pool holds; `None` means unlimited (an unpooled type under `unlimited`)."""
        if pool in self.pools:
            return self.pools[pool]
        return None if self.unpooled is UnpooledPolicy.UNLIMITED else 0


@dataclass(frozen=True)
class Snapshot:
    """Everything one pass decides over, read at one moment: the queue's jobs, the instances held
    outside it (training jobs outside the queue, warm pools), and what the teams' fair share, budgets
    and spot rates need.

    `jobs` holds every live job and the pending jobs the pass read (each pool's front:
    scheduling/queue_front.py); finished jobs play no part in a pass.
    """

    jobs: tuple[Job, ...]
    external_usage: Mapping[str, int] = field(default_factory=dict)
    team_usage: Mapping[str, float] = field(default_factory=dict)
    """Each team's decayed past use in instance-seconds (see `domain.config.teams.decay_usage`): the
    fair share among teams that want to borrow."""
    team_spend: Mapping[str, float] | None = None
    """Each team's recorded spend this UTC month in dollars (the cost records' `team` totals), for
    the hold budgets (`budget_hold`); None: spend unknown, and no budget holds any job."""
    prices: Prices = field(default_factory=dict)
    """The prices in force, for the hold budgets' estimates."""
    spot_rates: Mapping[str, float] = field(default_factory=dict)
    """Each instance type's spot interruptions per hour (domain/placements/spot_rates.py), read only when the
    `spot` section is adaptive (scheduling/purchase_options.py)."""
    warm_pools: tuple[WarmPool, ...] = ()
    """The warm pools the queue's attempts left, available at the pass's moment: their instances
    are held in their pools (domain/warm/warm_pools.py)."""


def held_warm_pools(snapshot: Snapshot) -> tuple[WarmPool, ...]:
    """The snapshot's warm pools that still hold their instances as warm pools: not those a live
    job's attempt started on (its placement names it), whose instances the attempt holds now, until
    SageMaker reports the warm pool reused."""
    taken = {job.where.selected.warm_pool for job in snapshot.jobs if job.is_live and job.where.selected is not None}
    return tuple(warm for warm in snapshot.warm_pools if warm.training_job_name not in taken)
