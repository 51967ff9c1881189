"""The `smq:expected-duration` tag's durations: what is accepted, in seconds, and what is refused."""

from __future__ import annotations

import pytest
from smq_lambda.domain.jobs.durations import MAX_EXPECTED_DURATION_S, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5400", 5400),
        ("1", 1),
        ("007", 7),
        ("45s", 45),
        ("90m", 5400),
        ("2h", 7200),
        ("1h30m", 5400),
        ("1h30m15s", 5415),
        ("1h15s", 3615),
        ("30m30s", 1830),
        ("0h5m", 300),
        ("120m", 7200),
        ("8784h", MAX_EXPECTED_DURATION_S),
        (str(MAX_EXPECTED_DURATION_S), MAX_EXPECTED_DURATION_S),
    ],
)
def test_accepted_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "must be a duration such as"),
        ("0", "must be a positive duration"),
        ("0s", "must be a positive duration"),
        ("0h0m0s", "must be a positive duration"),
        ("-5", "must be a duration such as"),
        ("+5", "must be a duration such as"),
        ("1.5h", "must be a duration such as"),
        ("2 h", "must be a duration such as"),
        (" 2h", "must be a duration such as"),
        ("2H", "must be a duration such as"),
        ("1d", "must be a duration such as"),
        ("30m1h", "must be a duration such as"),
        ("1h1h", "must be a duration such as"),
        ("h", "must be a duration such as"),
        ("PT1H", "must be a duration such as"),
        ("soon", "must be a duration such as"),
        ("8785h", "must be at most"),
        (str(MAX_EXPECTED_DURATION_S + 1), "must be at most"),
    ],
)
def test_refused_durations_say_what_is_accepted(text: str, says: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_duration(text)

    assert str(refused.value).startswith(says)
    assert repr(text) in str(refused.value)
