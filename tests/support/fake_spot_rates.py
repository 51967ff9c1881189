"""The SpotInterruptionBook port in memory, with the DynamoDB adapter's semantics (see
dynamodb_spot_rates.py): a save is conditional on the stored book's version."""

from __future__ import annotations

import threading

from smq_lambda.domain.placements.spot_rates import SpotInterruptions
from smq_lambda.errors import VersionConflict


class InMemorySpotInterruptionBook:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.book = SpotInterruptions()
        self.saves = 0

    def load(self) -> SpotInterruptions:
        with self._lock:
            return self.book

    def save(self, book: SpotInterruptions, *, previous: SpotInterruptions) -> None:
        with self._lock:
            if self.book.version != previous.version:
                raise VersionConflict("#spot-interruptions")
            self.book = book
            self.saves += 1
