"""What the bounded-item tests share: DynamoDB's own accounting of an item's size, and jobs that
have lived long (many attempts, many changes) built with the real lifecycle."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.lifecycle import StartRetryLimits
from smq_lambda.domain.jobs.model import Job

ITEM_LIMIT = 400 * 1024
"""DynamoDB's item size limit (attribute names and values, UTF-8)."""
NEVER_GIVE_UP = StartRetryLimits(max_refusals=10**9, max_duration=timedelta.max)


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """An item's size as DynamoDB counts it (developer guide, "Item sizes and formats"), rounding
    numbers up: names and strings (also a string set's) in UTF-8 bytes, 1 byte per 2 digits of a number
    plus 1, 3 bytes per list or map plus 1 per element."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: Mapping[str, Any]) -> int:
    ((kind, content),) = value.items()
    if kind == "S":
        return len(content.encode())
    if kind == "N":
        return (len(content.lstrip("-").replace(".", "")) + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(member.encode()) for member in content)
    if kind == "L":
        return 3 + sum(1 + _value_size(entry) for entry in content)
    if kind == "M":
        return 3 + sum(1 + len(name.encode()) + _value_size(entry) for name, entry in content.items())
    raise ValueError(f"no size rule for {kind}")


def attempted(job: Job, times: int, *, start: datetime, reason: str = "capacity") -> Job:
    """`job` after `times` more attempts, alternately refused and preempted, each ending with `reason`."""
    now = start
    for count in range(times):
        now += timedelta(minutes=1)
        started = lifecycle.start(job, now, reason="fits")
        if count % 2:
            job = lifecycle.refuse_start(started, now, reason=reason, lasting=False, limits=NEVER_GIVE_UP)
        else:
            stopping = lifecycle.request_stop(lifecycle.mark_running(started, now), now, preempt=True, reason=reason)
            job = lifecycle.requeue(stopping, now, outcome="preempted", reason=reason)
    return job
