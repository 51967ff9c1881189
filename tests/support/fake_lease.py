"""The PassLease port in memory, with the DynamoDB adapter's semantics (see dynamodb_lease.py)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta


class InMemoryPassLease:
    def __init__(self, duration: timedelta = timedelta(minutes=5)) -> None:
        self._duration = duration
        self._lock = threading.Lock()
        self.owner: str | None = None
        self.until: datetime | None = None
        self.rerun = False

    def try_acquire(self, owner: str, now: datetime, duration: timedelta | None = None) -> bool:
        with self._lock:
            if self.owner is not None and self.until is not None and self.until >= now:
                return False
            self.owner, self.until, self.rerun = owner, now + (self._duration if duration is None else duration), False
            return True

    def request_rerun(self) -> None:
        with self._lock:
            self.rerun = True

    def release(self, owner: str) -> bool:
        with self._lock:
            if self.owner != owner:
                return True
            if self.rerun:
                self.rerun = False
                return False
            self.owner = self.until = None
            return True

    def abandon(self, owner: str) -> None:
        with self._lock:
            if self.owner == owner:
                self.owner = self.until = None
