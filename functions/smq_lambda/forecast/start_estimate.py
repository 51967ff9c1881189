"""What a start estimate says (forecast/estimate.py makes them, each pass publishes them, the API
shows them), and the first one a job was given, against which its start is measured."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class EstimateKind(StrEnum):
    """What a start estimate's times rest on, which says how a user should read them."""

    BAND = "band"
    """Durations learned from history: the job likely starts at `at`, between `earliest` and `latest`."""
    POINT = "point"
    """Only the users' own expected durations (or nothing ahead): about `at`."""
    CEILING = "ceiling"
    """Some job ahead is known only by its MaxRuntimeInSeconds: the job starts at `at` at the latest
    (`latest` is `at`), and `earliest` has every such job end at once."""


@dataclass(frozen=True)
class StartEstimate:
    """When a pending job is expected to start, replaying the queue forward from a pass: once with
    every job's likely duration (`at`), once with each at the low end of its band and once at the
    high end; earliest ≤ at ≤ latest, none before the pass."""

    job_name: str
    at: datetime | None
    """The likely start. None: the replay cannot tell, and `assumed` says why (it does not start
    within the replay's horizon, it waits for a job of unknown duration, or it can never start as
    configured)."""
    assumed: str
    """What the replay assumed, in a sentence a user reads (durations and their sources)."""
    earliest: datetime | None = None
    """The soonest start the band allows; None when `at` is."""
    latest: datetime | None = None
    """The latest start the band allows; None when `at` is, or when the job does not start within
    the replay's horizon with long durations."""
    kind: EstimateKind = EstimateKind.POINT
    computed_at: datetime | None = None
    """When a pass computed it; None: the pass whose summary holds it. A pass that ran out of time
    for estimates keeps the last ones of the jobs it could not estimate, with their own time."""


@dataclass(frozen=True)
class GivenEstimate:
    """The first start estimate a pass published for a pending job, kept until it starts so that
    the start can be measured against it (see forecast/accuracy.py)."""

    job_name: str
    given_at: datetime
    earliest: datetime
    likely: datetime
    latest: datetime | None
