"""How long a job expects to train, as a user writes it in the `smq:expected-duration` tag.

A tag value is text, so the duration is either whole seconds (`5400`) or hours, minutes and seconds
in that order, each at most once, with their unit letters (`2h`, `90m`, `45s`, `1h30m`,
`1h30m15s`). Nothing else is a duration: no spaces, no fractions, no days, no capital letters, no
zero. The queue keeps the result in seconds (`Job.expected_duration_s`).
"""

from __future__ import annotations

import re

EXPECTED_DURATION_TAG = "smq:expected-duration"
"""The one tag under the queue's reserved `smq:` prefix that a request may carry."""
MAX_EXPECTED_DURATION_S = 366 * 24 * 3600
"""A year: far beyond any training job (SageMaker stops one after 28 days unless raised); it
bounds the numbers the queue stores and adds up."""
DURATION_EXAMPLES = "5400 (seconds), 45s, 90m, 2h or 1h30m"

_SECONDS = re.compile(r"[0-9]+")
_UNITS = re.compile(r"(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?(?:(?P<s>[0-9]+)s)?")


def parse_duration(text: str) -> int:
    """`text` in seconds; ValueError, saying what is accepted, when it is no positive duration of
    at most MAX_EXPECTED_DURATION_S."""
    if _SECONDS.fullmatch(text):
        seconds = int(text)
    else:
        match = _UNITS.fullmatch(text)
        if match is None or not text:
            raise ValueError(f"must be a duration such as {DURATION_EXAMPLES}, not {text!r}")
        hours, minutes, rest = (int(match.group(unit) or 0) for unit in "hms")
        seconds = hours * 3600 + minutes * 60 + rest
    if seconds < 1:
        raise ValueError(f"must be a positive duration such as {DURATION_EXAMPLES}, not {text!r}")
    if seconds > MAX_EXPECTED_DURATION_S:
        raise ValueError(f"must be at most {MAX_EXPECTED_DURATION_S} seconds (a year), not {text!r}")
    return seconds
