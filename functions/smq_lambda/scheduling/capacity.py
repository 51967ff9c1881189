"""The per-pass ledger of instances per pool: what is held, what is on its way back, what is free.

A pass builds one ledger from the snapshot and updates it as it decides (a start takes instances, a
preemption marks them as releasing), so later decisions in the same pass see earlier ones. The
snapshot itself is never touched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from smq_lambda.domain.model import Job
from smq_lambda.domain.states import LIVE_STATES, RELEASING_STATES
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot


class Ledger:
    """Instances per pool for one pass.

    used      = demand of live jobs (starting, running, preempting, stopping) + external usage
    releasing = demand of jobs whose stop was sent (preempting, stopping), a subset of used
    free      = capacity - used; may be negative when a pool shrank or outside jobs grew, and a
                pool with no capacity limit (unpooled types under `unlimited`) is never short.
    """

    def __init__(self, config: SchedulerConfig, used: Mapping[str, int], releasing: Mapping[str, int]) -> None:
        self._config = config
        self._used = Counter(used)
        self._releasing = Counter(releasing)

    @classmethod
    def measure(cls, snapshot: Snapshot, config: SchedulerConfig) -> Ledger:
        used: Counter[str] = Counter(snapshot.external_usage)
        releasing: Counter[str] = Counter()
        for job in snapshot.jobs:
            if job.state in LIVE_STATES:
                used.update(job.demand)
            if job.state in RELEASING_STATES:
                releasing.update(job.demand)
        return cls(config, used, releasing)

    def capacity(self, pool: str) -> int | None:
        return self._config.capacity(pool)

    def used(self, pool: str) -> int:
        """Instances held: live queue jobs plus training jobs outside the queue (GET /pools' `in_use`)."""
        return self._used[pool]

    def free(self, pool: str) -> int | None:
        """Instances nobody holds; None for a pool without a limit."""
        capacity = self.capacity(pool)
        return None if capacity is None else capacity - self._used[pool]

    def releasing(self, pool: str) -> int:
        return self._releasing[pool]

    def never_fits(self, demand: Mapping[str, int]) -> str | None:
        """The first pool the demand exceeds even when empty, if any."""
        for pool, count in demand.items():
            capacity = self.capacity(pool)
            if capacity is not None and count > capacity:
                return pool
        return None

    def fits(self, demand: Mapping[str, int]) -> bool:
        """Every pool has the instances free right now (a heterogeneous job needs all of them)."""
        return all(self.shortfall(pool, count, counting_releasing=False) <= 0 for pool, count in demand.items())

    def fits_once_released(self, demand: Mapping[str, int]) -> bool:
        """Every pool will have the instances once the stops already in flight land."""
        return all(self.shortfall(pool, count, counting_releasing=True) <= 0 for pool, count in demand.items())

    def shortfall(self, pool: str, count: int, *, counting_releasing: bool) -> int:
        """Instances of `pool` missing for `count` (≤ 0 when they are there)."""
        free = self.free(pool)
        if free is None:
            return 0
        return count - free - (self._releasing[pool] if counting_releasing else 0)

    def take(self, demand: Mapping[str, int]) -> None:
        """A start was decided: its instances are used from now on in this pass."""
        self._used.update(demand)

    def claim_releasing(self, demand: Mapping[str, int]) -> None:
        """A waiting job was promised instances on their way back: nobody else counts on them."""
        self._releasing.subtract(demand)

    def release(self, jobs: Iterable[Job]) -> None:
        """Preemptions were decided: their instances count as on their way back."""
        for job in jobs:
            self._releasing.update(job.demand)
