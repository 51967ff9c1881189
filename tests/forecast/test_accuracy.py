"""A start measured against the first estimate its job was given."""

from __future__ import annotations

from datetime import timedelta

import pytest
from smq_lambda.forecast.accuracy import BAND_GRACE_S, measure_start
from smq_lambda.forecast.start_estimate import GivenEstimate

from tests.scheduling.builders import NOW


def minutes(value: float):  # type: ignore[no-untyped-def]
    return NOW + timedelta(minutes=value)


BAND = GivenEstimate("a", given_at=NOW, earliest=minutes(3), likely=minutes(5), latest=minutes(7))


@pytest.mark.parametrize(
    ("started", "error_share", "within"),
    [
        (5, 0.0, True),
        (4, 0.25, True),
        (10, 0.5, False),
        (7 + BAND_GRACE_S / 60, (2 + BAND_GRACE_S / 60) / (7 + BAND_GRACE_S / 60), True),
        (2, 1.5, False),
    ],
)
def test_error_share_and_band(started: float, error_share: float, within: bool) -> None:
    measured = measure_start(BAND, minutes(started))

    assert measured.error_share == pytest.approx(error_share)
    assert measured.within_band is within
    assert measured.wait_s == pytest.approx(started * 60)


def test_a_band_without_a_latest_start_is_open_above() -> None:
    open_ended = GivenEstimate("a", given_at=NOW, earliest=minutes(3), likely=minutes(5), latest=None)

    assert measure_start(open_ended, minutes(600)).within_band


def test_a_start_at_once_divides_by_a_second() -> None:
    now = GivenEstimate("a", given_at=NOW, earliest=NOW, likely=NOW, latest=NOW)

    assert measure_start(now, NOW + timedelta(seconds=2)).error_share == 1.0
