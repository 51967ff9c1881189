"""The page token of GET /jobs: an opaque cursor that continues a listing after a job."""

from __future__ import annotations

import base64
import json

from smq_lambda.domain.model import ORDER_KEY_PATTERN
from smq_lambda.errors import InvalidRequest

_TOKEN_VERSION = 1


def encode_page_token(after_order_key: str) -> str:
    """An opaque cursor: the order key of the last job of the page (base64url of a small JSON)."""
    payload = json.dumps({"v": _TOKEN_VERSION, "after": after_order_key}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_page_token(token: str) -> str:
    """The order key a page token continues after; a token this API did not issue is bad input."""
    try:
        payload = json.loads(base64.urlsafe_b64decode((token + "=" * (-len(token) % 4)).encode()))
    except ValueError as exc:
        raise _bad_token() from exc
    if not isinstance(payload, dict) or payload.get("v") != _TOKEN_VERSION:
        raise _bad_token()
    after = payload.get("after")
    if not isinstance(after, str) or not ORDER_KEY_PATTERN.fullmatch(after):
        raise _bad_token()
    return after


def _bad_token() -> InvalidRequest:
    return InvalidRequest("next_token", "next_token is not a token returned by GET /jobs")
