"""A pending job's estimated start in words, as `smq status`, `smq describe` and `fit()`'s waiting
lines show it: `now`, `in 3–7 min` (a band learned from history), `in about 5 min` (a point: only
expected-duration tags ahead, or a band too narrow to show), `in at most 40 min` (only ceilings:
some job ahead is known only by its MaxRuntimeInSeconds). See the API's `EstimatedStart`."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from smq.jobs import parse_time

_UNITS = ((60.0, 1.0, "s"), (3600.0, 60.0, "min"), (48 * 3600.0, 3600.0, "h"), (math.inf, 86400.0, "days"))
"""(below, size, name): a span is told in the unit of its longer end, its shorter end in its own
when that differs (`in 20 min–3 h`)."""


def start_phrase(estimate: Mapping[str, Any], now: datetime) -> str | None:
    """The start in words; None when the queue cannot tell (`at` null)."""
    at = parse_time(estimate.get("at"))
    if at is None:
        return None
    likely = _seconds(at, now)
    if likely == 0:
        return "now"
    kind = estimate.get("kind") or "point"
    if kind == "ceiling":
        return f"in at most {_amount(likely, _unit(likely))}"
    earliest = _seconds(parse_time(estimate.get("earliest")) or at, now)
    latest_at = parse_time(estimate.get("latest"))
    if kind == "band" and latest_at is None:
        return f"in {_amount(earliest, _unit(earliest))} or later"
    latest = _seconds(latest_at or at, now)
    unit = _unit(latest)
    low, high = _count(earliest, unit), _count(latest, unit)
    if kind != "band" or low == high:
        return f"in about {_amount(likely, _unit(likely))}"
    if earliest == 0:
        return f"within {high} {unit[2]}"
    if _unit(earliest) != unit:
        return f"in {_amount(earliest, _unit(earliest))}–{_amount(latest, unit)}"
    return f"in {low}–{high} {unit[2]}"


FIRST_ESTIMATE_WAIT_S = 10.0
"""How long `smq submit` waits for the pass its submission kicked (it runs within seconds)."""


def await_first_estimate(
    get_job: Callable[[str], Mapping[str, Any]],
    answer: Mapping[str, Any],
    *,
    wait_s: float = FIRST_ESTIMATE_WAIT_S,
    poll_s: float = 0.5,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Mapping[str, Any] | None:
    """The job as a pass has seen it: the submission answer itself when a pass saw the job before
    the API answered, else the job once the next pass did (it estimated the start, or the job no
    longer waits); None when none did within `wait_s`."""
    if not answer.get("estimate_at_next_pass"):
        return answer
    deadline = clock() + wait_s
    while clock() < deadline:
        sleep(poll_s)
        job = get_job(str(answer["name"]))
        if job.get("state") != "pending" or not job.get("estimate_at_next_pass"):
            return job
    return None


def _seconds(moment: datetime, now: datetime) -> float:
    return max((moment - now).total_seconds(), 0.0)


def _unit(seconds: float) -> tuple[float, float, str]:
    return next(unit for unit in _UNITS if seconds < unit[0])


def _count(seconds: float, unit: tuple[float, float, str]) -> int:
    return max(round(seconds / unit[1]), 1) if seconds > 0 else 0


def _amount(seconds: float, unit: tuple[float, float, str]) -> str:
    return f"{_count(seconds, unit)} {unit[2]}"
