"""Fixtures the service scenarios share."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.service import passes


@pytest.fixture
def decided(monkeypatch: pytest.MonkeyPatch) -> list[Snapshot]:
    """Every snapshot a pass decides over, in order."""
    snapshots: list[Snapshot] = []
    real = passes.decide_pass

    def spy(snapshot: Snapshot, now: datetime, config: SchedulerConfig, measured: Ledger | None = None) -> Any:
        snapshots.append(snapshot)
        return real(snapshot, now, config, measured)

    monkeypatch.setattr(passes, "decide_pass", spy)
    return snapshots
