"""The DurationStore port in memory, with the same once-per-job rule as the DynamoDB store."""

from __future__ import annotations

import threading
from collections.abc import Collection

from smq_lambda.forecast.durations import DurationHistory, DurationKey, DurationSummary


class InMemoryDurationStore:
    def __init__(self) -> None:
        self.summaries: dict[DurationKey, DurationSummary] = {}
        self.loads: list[frozenset[DurationKey]] = []
        """The keys of each `load`, to check what a pass reads."""
        self._lock = threading.Lock()

    def load(self, keys: Collection[DurationKey]) -> DurationHistory:
        with self._lock:
            self.loads.append(frozenset(keys))
            return DurationHistory({key: self.summaries[key] for key in keys if key in self.summaries})

    def add(self, key: DurationKey, job_id: str, seconds: float) -> None:
        with self._lock:
            self.summaries[key] = self.summaries.get(key, DurationSummary()).with_duration(job_id, seconds)
