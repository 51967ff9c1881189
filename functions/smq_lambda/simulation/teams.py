"""The teams of a simulation whose configuration has quotas: their past use, carried from pass to
pass so that fair share decides in virtual time as it does in the queue, and their figures.

The deployed scheduler (service/team_usage.py) counts each team's decayed past use at every pass:
the last count, decayed by the time since it, plus the instances the team's live jobs hold at the
pass for that whole time (`domain.config.teams.decay_usage`), each job in the group it schedules in; the
first pass starts from none. The simulation counts the same way over virtual time, and gives the
result to the pass (`Snapshot.team_usage`). The figures are team_metrics.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from smq_lambda.domain.config.teams import Teams, decay_usage, held_by_team
from smq_lambda.domain.jobs.model import Job
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.actions import Action
from smq_lambda.simulation.team_metrics import TeamMeters


class SimulatedTeams:
    """`scheduling`: the teams the passes decide with (their usage is counted when they have quotas);
    `measured`: the teams whose figures are reported (none without quotas). They differ only to
    measure a run without quotas against the quotas it lacks."""

    def __init__(self, scheduling: Teams, measured: Teams, pools: Mapping[str, int]) -> None:
        self.scheduling = scheduling
        self.meters = TeamMeters(measured, pools) if measured.enabled else None
        self.counted_at: float | None = None

    @classmethod
    def off(cls) -> SimulatedTeams:
        """No quotas: no usage counted (a pass sees the usage it was given), nothing measured."""
        return cls(Teams(), Teams(), {})

    def usage(self, previous: Mapping[str, float], jobs: Iterable[Job], now: float) -> Mapping[str, float]:
        """The usage the pass at `now` decides with, `previous` being the last pass's."""
        if not self.scheduling.enabled:
            return previous
        counted_at, self.counted_at = self.counted_at, now
        if counted_at is None:
            return {}
        held = held_by_team(jobs, self.scheduling)
        return decay_usage(previous, now - counted_at, held, self.scheduling.usage_half_life_s)

    def observe(self, jobs: Iterable[Job], start: float, end: float) -> None:
        if self.meters is not None:
            self.meters.observe(jobs, start, end)

    def decided(self, actions: Sequence[Action], jobs: Mapping[str, Job], now: float) -> None:
        if self.meters is not None:
            self.meters.decided(actions, jobs, now)

    def report(self, makespan: float, trace: Iterable[TraceJob]) -> dict[str, Any]:
        """{"teams": the figures per group}, or nothing without quotas."""
        return {} if self.meters is None else {"teams": self.meters.report(makespan, trace)}
