"""The accuracy figures of a simulated run: each estimate measured against the start that followed,
by the live rule (forecast/accuracy.py), then grouped per priority, over all, and over the waits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.forecast.accuracy import BAND_GRACE_S
from smq_lambda.forecast.start_estimate import EstimateKind, StartEstimate
from smq_lambda.simulation.accuracy import ALL, WAITED, AccuracyTally, figures

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def band(name: str, earliest: float, likely: float, latest: float | None) -> StartEstimate:
    return StartEstimate(
        name,
        at(likely),
        "assumes …",
        earliest=at(earliest),
        latest=None if latest is None else at(latest),
        kind=EstimateKind.BAND,
    )


def measure(estimate: StartEstimate, started_s: float, priority: int = 0) -> dict:  # type: ignore[type-arg]
    tally = AccuracyTally()
    tally.give(estimate, priority, T0)
    tally.started(estimate.job_name, at(started_s))
    return tally.report()[ALL]


@pytest.mark.parametrize(
    ("earliest", "likely", "latest", "started", "within", "error_share"),
    [
        pytest.param(600, 1000, 1400, 1000, 1.0, 0.0, id="started at its likely time: error 0, in band"),
        pytest.param(600, 1000, 1400, 600, 1.0, 400 / 600, id="at the earliest: in band, error over the wait"),
        pytest.param(600, 1000, 1400, 1400 + BAND_GRACE_S, 1.0, (400 + BAND_GRACE_S) / 1430, id="latest + grace: in"),
        pytest.param(600, 1000, 1400, 1400 + BAND_GRACE_S + 1, 0.0, (431) / 1431, id="past latest + grace: out"),
        pytest.param(600, 1000, 1400, 600 - BAND_GRACE_S - 1, 0.0, 431 / 569, id="before earliest - grace: out"),
        pytest.param(600, 1000, None, 5000, 1.0, 4000 / 5000, id="no latest: any later start is in"),
        pytest.param(0, 0, 0, 0, 1.0, 0.0, id="told now, started now: error 0, in band"),
    ],
)  # fmt: skip
def test_one_estimate(
    earliest: float, likely: float, latest: float | None, started: float, within: float, error_share: float
) -> None:
    result = measure(band("j", earliest, likely, latest), started)

    assert result["measured"] == 1
    assert result["within_band"] == within
    assert result["median_error_share"] == round(error_share, 4)
    assert result["median_error_s"] == round(abs(started - likely), 1)
    assert result["within_1_min"] == (abs(started - likely) <= 60)
    assert result["within_10_min"] == (abs(started - likely) <= 600)


def test_figures_group_per_priority_over_all_and_over_the_waits() -> None:
    tally = AccuracyTally()
    tally.give(band("high", 0, 0, 0), 3, T0)  # starts at once: in "all", not in "waited"
    tally.give(band("low-1", 900, 1000, 1100), 0, T0)  # in band, error 0
    tally.give(band("low-2", 900, 1000, 1100), 0, T0)  # late: 2000 s, out, error 1000 of 2000
    tally.give(StartEstimate("unknown", None, "waits for a job of unknown duration"), 0, T0)
    tally.give(band("never", 10, 20, 30), 1, T0)  # its job never starts
    for name, started in (("high", 0), ("low-1", 1000), ("low-2", 2000), ("unknown", 500)):
        tally.started(name, at(started))

    report = tally.report()

    assert list(report) == [ALL, WAITED, "3", "0", "unmeasured", "kinds"]  # priority 1's one is unmeasured
    assert report[ALL] == {
        "measured": 3,
        "within_band": round(2 / 3, 4),
        "within_1_min": round(2 / 3, 4),
        "within_10_min": round(2 / 3, 4),
        "median_error_share": 0.0,
        "median_error_s": 0.0,
        "without_time": 1,
    }
    assert (report[WAITED]["measured"], report[WAITED]["within_band"]) == (2, 0.5)
    assert report[WAITED]["median_error_share"] == 0.25  # the median of 0 and 1000 / 2000
    assert (report["3"]["measured"], report["3"]["within_band"]) == (1, 1.0)
    assert (report["0"]["measured"], report["0"]["without_time"]) == (2, 1)
    assert report["unmeasured"] == 1
    assert {kind: figures["measured"] for kind, figures in report["kinds"].items()} == {"band": 3}


def test_a_job_measures_every_estimate_of_its_wait_once() -> None:
    """Three passes estimated it; its start measures the three, and its next start none of them."""
    tally = AccuracyTally()
    for given_s in (0, 100, 200):
        tally.give(band("j", 300, 400, 500), 0, at(given_s))
    tally.started("j", at(400))
    tally.started("j", at(9000))

    assert tally.report()[ALL]["measured"] == 3
    assert tally.report()[ALL]["within_band"] == 1.0


starts = st.integers(min_value=0, max_value=10 * 86400)  # whole seconds, as estimates are shown


@given(st.lists(st.tuples(starts, starts, starts, starts), min_size=1, max_size=30))
def test_the_figures_are_shares_and_in_band_means_between_the_ends(cases: list[tuple[int, int, int, int]]) -> None:
    tally = AccuracyTally()
    inside = 0
    for number, values in enumerate(cases):
        *ends, started = values
        earliest, likely, latest = sorted(ends)
        tally.give(band(f"j{number}", earliest, likely, latest), number % 3, T0)
        tally.started(f"j{number}", at(started))
        inside += earliest - BAND_GRACE_S <= started <= latest + BAND_GRACE_S

    report = tally.report()

    assert report[ALL]["measured"] == len(cases)
    assert sum(report[str(priority)]["measured"] for priority in range(3) if str(priority) in report) == len(cases)
    assert 0.0 <= report[ALL]["within_band"] <= 1.0
    assert report[ALL]["within_band"] == round(inside / len(cases), 4)
    assert report[ALL]["median_error_share"] >= 0.0


def test_nothing_measured_has_no_shares() -> None:
    assert figures([]) == {
        "measured": 0,
        "within_band": None,
        "within_1_min": None,
        "within_10_min": None,
        "median_error_share": None,
        "median_error_s": None,
        "without_time": 0,
    }
