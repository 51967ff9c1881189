"""The page token of GET /attempts (service/timeline_token.py): every cursor comes back as it went
out, the longest fits the API's token cap, and any other text is a 400 naming next_token."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.errors import InvalidRequest
from smq_lambda.handlers.query_params import MAX_TOKEN_LENGTH
from smq_lambda.ports import HistoryPosition
from smq_lambda.service.timeline import PartlyListed, TimelineCursor
from smq_lambda.service.timeline_token import decode_timeline_token, encode_timeline_token

LONGEST_NAME = "a" * 63
LONGEST_ID = "f" * 64
LIVE = HistoryPosition(False, "preempting", f"99999999#2026-11-26T09:00:00.000000Z#{LONGEST_NAME}", LONGEST_NAME)
ENDED = HistoryPosition(True, "2026-11-26", "2026-11-26T09:00:00.000000Z", f"{LONGEST_NAME}#{LONGEST_ID}")


@pytest.mark.parametrize(
    "cursor",
    [
        TimelineCursor(LIVE),
        TimelineCursor(ENDED, PartlyListed(LONGEST_ID, 1_000_000)),
        TimelineCursor(LIVE, PartlyListed(LONGEST_ID, 1_000_000)),
        TimelineCursor(None, PartlyListed("id-1", 2)),
    ],
    ids=["live", "ended-partly", "live-partly", "inside-the-first-job"],
)
def test_a_cursor_comes_back_as_it_went_out_in_a_token_that_fits_the_cap(cursor: TimelineCursor) -> None:
    token = encode_timeline_token(cursor)
    assert decode_timeline_token(token) == cursor
    assert len(token) <= MAX_TOKEN_LENGTH


def token_of(payload: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "payload",
    [
        [1],
        {"v": 2},
        {"v": 1, "extra": 1},
        {"v": 1, "at": [False, "pending", LIVE.sort_key, LIVE.item_key]},
        {"v": 1, "at": [True, "2026-11-26", LIVE.sort_key, LIVE.item_key]},
        {"v": 1, "at": [1, "running", LIVE.sort_key, LIVE.item_key]},
        {"v": 1, "at": [False, "running", LIVE.sort_key, ""]},
        {"v": 1, "at": [False, "running", LIVE.sort_key]},
        {"v": 1, "in": ["id#1", 1]},
        {"v": 1, "in": ["id-1", 0]},
        {"v": 1, "in": ["id-1", True]},
        {"v": 1, "in": ["id-1", 1.5]},
    ],
)
def test_a_token_this_route_did_not_issue_is_refused_naming_next_token(payload: object) -> None:
    with pytest.raises(InvalidRequest) as refused:
        decode_timeline_token(token_of(payload))
    assert refused.value.field == "next_token"


@given(st.text(max_size=80))
def test_any_text_decodes_or_is_refused_naming_next_token(text: str) -> None:
    try:
        decode_timeline_token(text)
    except InvalidRequest as refused:
        assert refused.field == "next_token"
