"""The demo's start-estimate table: the first estimate each job was given for each of its waits (its
first one, and each after a preemption), when that wait ended with a start, and whether the start
fell within the band, judged as the queue's own accuracy metrics judge it (forecast/accuracy.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from smq_lambda.forecast.accuracy import BAND_GRACE_S, measure_start
from smq_lambda.forecast.start_estimate import GivenEstimate

from smq.jobs import parse_time
from smq.start_estimates import start_phrase


@dataclass(frozen=True)
class GivenStart:
    """The first estimate a job was given for one wait, as the API showed it."""

    job: str
    wait: int
    """0: its first wait; n: its wait after n attempts ended (a preemption, say)."""
    given_at: datetime
    estimate: Mapping[str, Any]
    """The API's `estimated_start`."""

    @property
    def phrase(self) -> str:
        return start_phrase(self.estimate, self.given_at) or "unknown"

    def measured(self, started_at: datetime) -> bool:
        """Whether a start at `started_at` fell within the band, with the metrics' grace."""
        at = parse_time(self.estimate["at"])
        assert at is not None
        given = GivenEstimate(
            job_name=self.job,
            given_at=self.given_at,
            earliest=parse_time(self.estimate.get("earliest")) or at,
            likely=at,
            latest=parse_time(self.estimate.get("latest")),
        )
        return measure_start(given, started_at).within_band


class EstimateLog:
    """Keeps the first estimate with a time that each job was shown for each of its waits."""

    def __init__(self) -> None:
        self.given: dict[tuple[str, int], GivenStart] = {}

    def note(self, job: Mapping[str, Any], seen_at: datetime) -> None:
        """Note `job`'s estimate (a job as the API answers it), unless one was noted for this wait."""
        estimate = job.get("estimated_start")
        if job["state"] != "pending" or not estimate or estimate.get("at") is None:
            return
        wait = len(job["attempts"])
        given_at = parse_time(estimate.get("computed_at")) or seen_at
        self.given.setdefault((job["name"], wait), GivenStart(job["name"], wait, given_at, estimate))

    def note_all(self, jobs: Iterable[Mapping[str, Any]], seen_at: datetime) -> None:
        for job in jobs:
            self.note(job, seen_at)


@dataclass(frozen=True)
class EstimateRow:
    given: GivenStart
    started_at: datetime | None

    @property
    def within_band(self) -> bool | None:
        return None if self.started_at is None else self.given.measured(self.started_at)

    def cells(self) -> list[str]:
        estimate = self.given.estimate
        earliest, latest = parse_time(estimate.get("earliest")), parse_time(estimate.get("latest"))
        band = f"{_clock(earliest)}–{_clock(latest)}" if earliest and latest else f"from {_clock(earliest)}"
        verdict = {None: "did not start", True: "yes", False: "no"}[self.within_band]
        return [
            self.given.job,
            "first" if self.given.wait == 0 else f"after attempt {self.given.wait}",
            _clock(self.given.given_at),
            f"{self.given.phrase} ({estimate.get('kind')})",
            band,
            _clock(self.started_at),
            verdict,
        ]


HEADERS = ["Job", "Wait", "Told at", "Estimate", "Band", "Started", f"In band (±{BAND_GRACE_S:.0f} s)"]


def estimate_rows(log: EstimateLog, jobs: Iterable[Mapping[str, Any]]) -> list[EstimateRow]:
    """Each noted estimate of `jobs` with the start that ended its wait (None: it never started)."""
    by_name = {job["name"]: job for job in jobs}
    rows = []
    for (name, wait), given in sorted(log.given.items()):
        attempts = by_name[name]["attempts"] if name in by_name else []
        started = parse_time(attempts[wait]["started_at"]) if wait < len(attempts) else None
        rows.append(EstimateRow(given, started))
    return rows


def _clock(moment: datetime | None) -> str:
    return moment.strftime("%H:%M:%S") if moment else "-"
