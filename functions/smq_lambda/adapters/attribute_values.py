"""DynamoDB attribute values the queue table's codecs share: times as sortable text, bounded text,
and the readers of attributes an item has only when they have a value."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from smq_lambda.domain.jobs.outcomes import AttemptOutcome

Item = dict[str, dict[str, Any]]

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
MAX_TEXT_CHARS = 1024
"""The longest reason kept (SageMaker's own FailureReason limit); longer ones end in an ellipsis."""


def format_time(value: datetime) -> str:
    """UTC, microseconds, `Z`: sorts as text in time order. Naive datetimes are taken as UTC."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime(_TIME_FORMAT)


def parse_time(text: str) -> datetime:
    """The inverse of format_time (fromisoformat: several times faster than strptime)."""
    return datetime.fromisoformat(text)


def bounded_text(text: str) -> str:
    """`text` cut to MAX_TEXT_CHARS: a refusal that echoes a whole request must not fill the item."""
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 1] + "…"


def optional_s(item: Mapping[str, Mapping[str, Any]], key: str) -> str | None:
    value = item.get(key)
    return None if value is None else value["S"]


def optional_n(item: Mapping[str, Mapping[str, Any]], key: str) -> int | None:
    value = item.get(key)
    return None if value is None else int(value["N"])


def optional_outcome(item: Mapping[str, Mapping[str, Any]], key: str) -> AttemptOutcome | None:
    text = optional_s(item, key)
    return None if text is None else AttemptOutcome(text)


def optional_time(item: Mapping[str, Mapping[str, Any]], key: str) -> datetime | None:
    text = optional_s(item, key)
    return None if text is None else parse_time(text)
