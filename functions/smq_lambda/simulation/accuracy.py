"""How right a simulated run's start estimates were, per priority: each estimate measured against
the start that followed it, by the live queue's own rule (forecast/accuracy.py: the error of the
likely start as a share of the wait from the estimate to the start, and whether the start fell in
the band, widened by its grace each side).

Every estimate counts in `all` and in its priority's figures, a job that started at once and was
told "now" included; `waited` has the figures of the estimates after which the job waited longer
than the band's grace (BAND_GRACE_S), the ones a user reads as a time. An estimate without a time
(the replay could not tell) is counted apart (`without_time`), and an estimate whose job had not
started when the run ended is not measured (`unmeasured`).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from smq_lambda.forecast.accuracy import BAND_GRACE_S, NEAR_S, StartAccuracy, measure_start
from smq_lambda.forecast.start_estimate import EstimateKind, GivenEstimate, StartEstimate
from smq_lambda.service.start_estimates import first_given

ALL = "all"
"""The key of the figures over every priority."""
WAITED = "waited"
"""The key of the figures over the estimates followed by a wait longer than the band's grace."""


@dataclass
class AccuracyTally:
    """The estimates of one kind (say, each job's first, by learned durations): open until their
    job starts, then measured."""

    open: dict[str, list[tuple[int, EstimateKind, GivenEstimate]]] = field(default_factory=dict)
    measured: list[tuple[int, EstimateKind, StartAccuracy]] = field(default_factory=list)
    without_time: Counter[int] = field(default_factory=Counter)

    def give(self, estimate: StartEstimate, priority: int, given_at: datetime) -> None:
        if estimate.at is None:
            self.without_time[priority] += 1
            return
        given = first_given(estimate, given_at)
        self.open.setdefault(estimate.job_name, []).append((priority, estimate.kind, given))

    def started(self, job_name: str, at: datetime) -> None:
        """The job started: every estimate it was given since it last started is measured."""
        self.measured.extend(
            (priority, kind, measure_start(given, at)) for priority, kind, given in self.open.pop(job_name, ())
        )

    def report(self) -> dict[str, Any]:
        """The figures over every priority ("all"), over those followed by a wait ("waited"), then
        per priority, highest first; how many estimates were never measured; and the figures per
        kind of estimate ("kinds": band, point, ceiling; see forecast/start_estimate.py)."""
        by_priority: dict[int, list[StartAccuracy]] = {}
        by_kind: dict[str, list[StartAccuracy]] = {}
        for priority, kind, accuracy in self.measured:
            by_priority.setdefault(priority, []).append(accuracy)
            by_kind.setdefault(str(kind), []).append(accuracy)
        priorities = sorted(by_priority.keys() | self.without_time.keys(), reverse=True)
        measured = [accuracy for _, _, accuracy in self.measured]
        return {
            ALL: figures(measured, self.without_time.total()),
            WAITED: figures([accuracy for accuracy in measured if accuracy.wait_s > BAND_GRACE_S]),
            **{
                str(priority): figures(by_priority.get(priority, []), self.without_time[priority])
                for priority in priorities
            },
            "unmeasured": sum(len(given) for given in self.open.values()),
            "kinds": {kind: figures(by_kind.get(kind, [])) for kind in map(str, EstimateKind) if kind in by_kind},
        }


def figures(measured: Sequence[StartAccuracy], without_time: int = 0) -> dict[str, Any]:
    """`measured` estimates; `within_band`: the share whose start fell in the band;
    `within_1_min` and `within_10_min`: the shares that started that close to the likely start
    (forecast/accuracy.py NEAR_S); `median_error_share` and `median_error_s`: of the likely start's
    error; `without_time`: estimates with no time, not measured (None where nothing was measured)."""
    near = {f"within_{round(seconds / 60)}_min": seconds for seconds in NEAR_S}
    if not measured:
        return {"measured": 0, "within_band": None, **dict.fromkeys(near), "median_error_share": None,
                "median_error_s": None, "without_time": without_time}  # fmt: skip
    return {
        "measured": len(measured),
        "within_band": _share([accuracy.within_band for accuracy in measured]),
        **{key: _share([accuracy.within(seconds) for accuracy in measured]) for key, seconds in near.items()},
        "median_error_share": round(statistics.median(accuracy.error_share for accuracy in measured), 4),
        "median_error_s": round(statistics.median(accuracy.error_s for accuracy in measured), 1),
        "without_time": without_time,
    }


def _share(holds: Sequence[bool]) -> float:
    return round(sum(holds) / len(holds), 4)
