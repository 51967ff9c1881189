"""The WarmPoolStore port in memory, with the DynamoDB adapter's semantics (adapters/dynamodb_warm_pools.py):
an ended warm pool is never recorded again, each counts in the totals once."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime

from smq_lambda.domain.warm.warm_pools import WarmPool, WarmPoolTotals


class InMemoryWarmPools:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.held: dict[str, WarmPool] = {}
        self.ended: set[str] = set()
        self._totals = WarmPoolTotals()

    def record(self, warm: WarmPool) -> bool:
        with self._lock:
            if warm.training_job_name in self.held or warm.training_job_name in self.ended:
                return False
            self.held[warm.training_job_name] = warm
            return True

    def end(self, training_job_name: str, *, reused: bool, retained_instance_s: int) -> bool:
        with self._lock:
            if training_job_name in self.ended:
                return False
            self.held.pop(training_job_name, None)
            self.ended.add(training_job_name)
            totals = self._totals
            self._totals = WarmPoolTotals(
                totals.retained + 1, totals.reused + int(reused), totals.retained_instance_s + retained_instance_s
            )
            return True

    def release(self, training_job_name: str) -> bool:
        with self._lock:
            warm = self.held.get(training_job_name)
            if warm is None or warm.released:
                return False
            self.held[training_job_name] = replace(warm, released=True)
            return True

    def available(self, now: datetime) -> list[WarmPool]:
        with self._lock:
            names = sorted(self.held)
            for name in names:
                if self.held[name].available_until <= now:
                    del self.held[name]
            return [self.held[name] for name in names if name in self.held]

    def totals(self) -> WarmPoolTotals:
        return self._totals
