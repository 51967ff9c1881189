"""The page token of GET /attempts: an opaque TimelineCursor (base64url of a small JSON), checked
on the way back in so that nothing a client made up reaches DynamoDB as a start key."""

from __future__ import annotations

import re
from typing import Any

from smq_lambda.adapters.page_token import opaque, unwrap
from smq_lambda.domain.jobs.model import JOB_ID_PATTERN, ORDER_KEY_PATTERN
from smq_lambda.domain.jobs.states import LIVE_STATES
from smq_lambda.errors import InvalidRequest
from smq_lambda.ports import HistoryPosition
from smq_lambda.service.timeline import PartlyListed, TimelineCursor

_TOKEN_VERSION = 1
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")
"""What the store writes as `attempt_end` (item_codec.format_time)."""
_ITEM_KEY = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}(#[a-zA-Z0-9-]{1,64})?")
"""A job's name, or `<name>#<job_id>` for an earlier job of the name."""
_MAX_ATTEMPT_NUMBER = 1_000_000
_LIVE = frozenset(str(state) for state in LIVE_STATES)


def encode_timeline_token(cursor: TimelineCursor) -> str:
    payload: dict[str, Any] = {"v": _TOKEN_VERSION}
    if cursor.after is not None:
        at = cursor.after
        payload["at"] = [at.ended, at.partition, at.sort_key, at.item_key]
    if cursor.partly is not None:
        payload["in"] = [cursor.partly.job_id, cursor.partly.last_number]
    return opaque(payload)


def decode_timeline_token(token: str) -> TimelineCursor:
    """The cursor a token stands for; a token GET /attempts did not issue is bad input."""
    payload = unwrap(token)
    if not isinstance(payload, dict) or payload.get("v") != _TOKEN_VERSION or not set(payload) <= {"v", "at", "in"}:
        raise _bad_token()
    return TimelineCursor(_position(payload.get("at")), _partly(payload.get("in")))


def _position(value: Any) -> HistoryPosition | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 4 and isinstance(value[0], bool)):
        raise _bad_token()
    ended, partition, sort_key, item_key = value
    if not all(isinstance(part, str) for part in (partition, sort_key, item_key)):
        raise _bad_token()
    if ended:
        well_formed = bool(_DAY.fullmatch(partition) and _TIME.fullmatch(sort_key))
    else:
        well_formed = partition in _LIVE and bool(ORDER_KEY_PATTERN.fullmatch(sort_key))
    if not (well_formed and _ITEM_KEY.fullmatch(item_key)):
        raise _bad_token()
    return HistoryPosition(ended, partition, sort_key, item_key)


def _partly(value: Any) -> PartlyListed | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2):
        raise _bad_token()
    job_id, number = value
    if not (isinstance(job_id, str) and JOB_ID_PATTERN.fullmatch(job_id)):
        raise _bad_token()
    if not (type(number) is int and 1 <= number <= _MAX_ATTEMPT_NUMBER):
        raise _bad_token()
    return PartlyListed(job_id, number)


def _bad_token() -> InvalidRequest:
    return InvalidRequest("next_token", "next_token is not a token returned by GET /attempts")
