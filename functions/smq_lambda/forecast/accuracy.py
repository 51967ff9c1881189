"""How right a start estimate was: the start measured against the first estimate the job was given.

Two figures per start, the ones issue 24 sets targets for (and `smq simulate` reports per priority):
the absolute error of the likely start as a share of the actual wait (from the estimate to the
start), and whether the start fell inside the band; beside them, as the HPC literature reports
predictors, whether it came within 1 and within 10 minutes of the likely start (`NEAR_S`). Starts happen at scheduling passes, which
follow SageMaker's events by a batching window, so the band is widened by BAND_GRACE_S each side
before it is judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from smq_lambda.forecast.start_estimate import GivenEstimate

NEAR_S = (60.0, 600.0)
"""The HPC literature's closeness figures: a start within 1 minute and within 10 minutes of the
likely start (Slurm's own `--start` is within 1 minute for 4-17 % of jobs; the best published
learned predictors reach 65-76 %)."""
BAND_GRACE_S = 30.0
"""Slack each side of a band: an event's trip to the pass that acts on it."""
MIN_WAIT_S = 1.0
"""The shortest wait an error is divided by."""


@dataclass(frozen=True)
class StartAccuracy:
    job_name: str
    wait_s: float
    """From the estimate to the start."""
    error_s: float
    """|start - likely start|."""
    within_band: bool

    @property
    def error_share(self) -> float:
        return self.error_s / max(self.wait_s, MIN_WAIT_S)

    def within(self, seconds: float) -> bool:
        """The start came within `seconds` of the likely start (`NEAR_S`)."""
        return self.error_s <= seconds


def measure_start(given: GivenEstimate, started_at: datetime, *, grace_s: float = BAND_GRACE_S) -> StartAccuracy:
    """How `given` fared against a start at `started_at`."""
    after_earliest = (started_at - given.earliest).total_seconds() >= -grace_s
    before_latest = given.latest is None or (started_at - given.latest).total_seconds() <= grace_s
    return StartAccuracy(
        job_name=given.job_name,
        wait_s=max((started_at - given.given_at).total_seconds(), 0.0),
        error_s=abs((started_at - given.likely).total_seconds()),
        within_band=after_earliest and before_latest,
    )
