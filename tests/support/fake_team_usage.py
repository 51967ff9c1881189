"""The TeamUsageHistory port in memory, with the DynamoDB adapter's semantics (see
dynamodb_team_usage.py): a save is conditional on the stored record's `at`."""

from __future__ import annotations

import threading

from smq_lambda.errors import ServiceUnavailable, VersionConflict
from smq_lambda.pass_summary import TeamUsageRecord


class InMemoryTeamUsageHistory:
    def __init__(self, record: TeamUsageRecord | None = None) -> None:
        self._lock = threading.Lock()
        self.record = record
        self.saves = 0
        self.unavailable = False
        """Set to make every call raise ServiceUnavailable, as a throttled table does."""

    def load(self) -> TeamUsageRecord | None:
        self._check_available()
        with self._lock:
            return self.record

    def save(self, record: TeamUsageRecord, *, previous: TeamUsageRecord | None) -> None:
        self._check_available()
        with self._lock:
            stored_at = None if self.record is None else self.record.at
            expected_at = None if previous is None else previous.at
            if stored_at != expected_at:
                raise VersionConflict("#team-usage")
            self.record = TeamUsageRecord(usage=dict(record.usage), at=record.at)
            self.saves += 1

    def _check_available(self) -> None:
        if self.unavailable:
            raise ServiceUnavailable("DynamoDB", "ThrottlingException", "throttled (fake)")
