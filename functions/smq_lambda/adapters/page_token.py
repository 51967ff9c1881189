"""Page tokens: opaque cursors (base64url of a small JSON) that continue a listing; GET /jobs's
continues after a job, and `opaque`/`unwrap` are the envelope every listing's token uses."""

from __future__ import annotations

import base64
import json

from smq_lambda.domain.jobs.model import ORDER_KEY_PATTERN
from smq_lambda.errors import InvalidRequest

_TOKEN_VERSION = 1


def opaque(payload: object) -> str:
    """`payload` as a token: base64url of its compact JSON, without padding."""
    text = json.dumps(payload, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def unwrap(token: str) -> object:
    """What `opaque` wrapped in `token`; None when it is no such token."""
    try:
        return json.loads(base64.urlsafe_b64decode((token + "=" * (-len(token) % 4)).encode()))
    except ValueError:
        return None


def encode_page_token(after_order_key: str) -> str:
    """An opaque cursor: the order key of the last job of the page."""
    return opaque({"v": _TOKEN_VERSION, "after": after_order_key})


def decode_page_token(token: str) -> str:
    """The order key a page token continues after; a token this API did not issue is bad input."""
    payload = unwrap(token)
    if not isinstance(payload, dict) or payload.get("v") != _TOKEN_VERSION:
        raise _bad_token()
    after = payload.get("after")
    if not isinstance(after, str) or not ORDER_KEY_PATTERN.fullmatch(after):
        raise _bad_token()
    return after


def _bad_token() -> InvalidRequest:
    return InvalidRequest("next_token", "next_token is not a token returned by GET /jobs")
