"""What a pass knows of the warm pools while it walks (the rules are in `warm_pools`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from smq_lambda.domain.warm.warm_pools import WarmPool
from smq_lambda.scheduling.actions import ReleaseWarmPool


class WarmBook:
    """The warm pools of one pass: those still held, those jobs start on, those the pass ends."""

    def __init__(self, warm_pools: Iterable[WarmPool]) -> None:
        self.held: list[WarmPool] = sorted(
            (warm for warm in warm_pools if not warm.released),
            key=lambda warm: (warm.available_until, warm.training_job_name),
        )
        """Available and not ended by the queue, soonest ending first."""
        self.reused: dict[str, WarmPool] = {}
        """Per job started on a warm pool in this pass, that warm pool."""
        self.releases: list[ReleaseWarmPool] = []

    def in_pool(self, pool: str) -> list[WarmPool]:
        return [warm for warm in self.held if warm.pool == pool]

    def matching(self, key: str | None, demand: Mapping[str, int]) -> WarmPool | None:
        """The held warm pool a job of warm key `key` needing `demand` would start on (same key, one
        pool, same count), soonest ending first; None when there is none."""
        if key is None or len(demand) != 1:
            return None
        pool, count = next(iter(demand.items()))
        return next((warm for warm in self.in_pool(pool) if warm.key == key and warm.count == count), None)

    def endable(self, key: str | None, pool: str) -> int:
        """Instances of `pool` in held warm pools a job of warm key `key` does not match: those ended
        for it when it waits ahead of them (`warm_pools`, rule 2)."""
        return sum(warm.count for warm in self.in_pool(pool) if warm.key != key)
