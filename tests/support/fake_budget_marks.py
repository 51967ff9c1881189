"""The BudgetWarningMarks port in memory, with the DynamoDB adapter's semantics (one claim wins)."""

from __future__ import annotations

import threading


class InMemoryBudgetWarningMarks:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.marks: set[tuple[str, str, float]] = set()

    def claim(self, team: str, month: str, threshold: float) -> bool:
        with self._lock:
            if (team, month, threshold) in self.marks:
                return False
            self.marks.add((team, month, threshold))
            return True
