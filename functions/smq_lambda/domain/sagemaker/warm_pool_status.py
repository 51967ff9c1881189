"""SageMaker's `WarmPoolStatus` of a training job, as DescribeTrainingJob and its state-change
events report it (managed warm pools): its status and what it billed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

AVAILABLE, IN_USE, REUSED, TERMINATED = "Available", "InUse", "Reused", "Terminated"
ENDED = frozenset({REUSED, TERMINATED})
"""Statuses that end a warm pool's life: its instances went to the job that reused it, or back."""


@dataclass(frozen=True)
class WarmPoolStatus:
    """SageMaker's `WarmPoolStatus` of a training job (DescribeTrainingJob and state-change events)."""

    status: str
    retained_billable_s: int | None = None
    """`ResourceRetainedBillableTimeInSeconds`: what keeping the instances warm billed, per instance."""
    reused_by: str | None = None
    """`ReusedByJob`: the training job that started on the warm pool."""


def warm_pool_status_of(described: Mapping[str, Any]) -> WarmPoolStatus | None:
    """The `WarmPoolStatus` of a description or an event's detail; None when absent or unreadable."""
    value = described.get("WarmPoolStatus")
    if not isinstance(value, Mapping) or not isinstance(value.get("Status"), str):
        return None
    seconds = value.get("ResourceRetainedBillableTimeInSeconds")
    reused_by = value.get("ReusedByJob")
    return WarmPoolStatus(
        status=value["Status"],
        retained_billable_s=seconds if isinstance(seconds, int) and not isinstance(seconds, bool) else None,
        reused_by=reused_by if isinstance(reused_by, str) else None,
    )
