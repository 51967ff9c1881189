"""Why a gate holds a job (scheduling/gates.py): its kind, and the words it is told. A module of its
own so that the core's gates and the features' gates (scheduling/features.py) share it without
importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class HoldKind(StrEnum):
    TOO_LARGE = "too_large"
    PLAN_WINDOW_CLOSED = "plan_window_closed"
    BACKOFF = "backoff"
    BEYOND_REACH = "beyond_reach"
    BUDGET = "budget"


CORE_KINDS = frozenset({HoldKind.TOO_LARGE, HoldKind.PLAN_WINDOW_CLOSED, HoldKind.BACKOFF, HoldKind.BEYOND_REACH})
"""The kinds of the core's own gates; the others are features' (scheduling/features.py)."""


@dataclass(frozen=True)
class Held:
    """A gate holds the job: which one, the reason it is told, and how the reason of a flexible job
    none of whose placements passes names this one (`brief`; the whole reason when None)."""

    kind: HoldKind
    reason: str
    brief: str | None = None
