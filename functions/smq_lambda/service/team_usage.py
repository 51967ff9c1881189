"""The teams' decayed past use, carried from one scheduling pass to the next.

With team quotas, a pass loads the last record (`TeamUsageHistory`), adds the interval since it:
each team's usage halves every `Teams.usage_half_life_s`, and the instances its live jobs hold now
count for the whole interval (`domain.config.teams.decay_usage`), decides with the result as the fair share
among borrowers (`Snapshot.team_usage`), and saves it conditionally after the pass. The record is
bookkeeping, never a reason to fail a pass: a history that cannot be read leaves this pass without
past usage, and a save that loses a race (another pass counted the interval) or meets a throttled
table is logged and dropped, so the next pass counts the interval from the stored record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from aws_lambda_powertools import Logger

from smq_lambda.domain.config.teams import Teams, decay_usage, held_by_team
from smq_lambda.domain.jobs.model import Job
from smq_lambda.errors import ServiceUnavailable, VersionConflict
from smq_lambda.pass_summary import TeamUsageRecord
from smq_lambda.ports import TeamUsageHistory

logger = Logger(service="smq", child=True)


@dataclass(frozen=True)
class CountedUsage:
    """The usage a pass decides with, and the record it was counted from (the save's condition)."""

    previous: TeamUsageRecord | None
    record: TeamUsageRecord

    @property
    def usage(self) -> Mapping[str, float]:
        return self.record.usage


class TeamUsageKeeper:
    """`history` None: no usage history (every pass decides with no past usage)."""

    def __init__(self, history: TeamUsageHistory | None) -> None:
        self._history = history

    def count(self, teams: Teams, live: Iterable[Job], now: datetime) -> CountedUsage | None:
        """The usage up to `now`; None without quotas, without a history, or when it cannot be read."""
        if not teams.enabled or self._history is None:
            return None
        try:
            previous = self._history.load()
        except ServiceUnavailable as exc:
            logger.warning("could not read the teams' usage; this pass decides without it", extra={"error": str(exc)})
            return None
        held = held_by_team(live, teams)
        if previous is None:
            return CountedUsage(previous=None, record=TeamUsageRecord(usage={}, at=now))
        elapsed = (now - previous.at).total_seconds()
        usage = decay_usage(previous.usage, elapsed, held, teams.usage_half_life_s)
        return CountedUsage(previous=previous, record=TeamUsageRecord(usage=usage, at=max(now, previous.at)))

    def keep(self, counted: CountedUsage | None) -> None:
        """Save what the pass counted, unless another pass counted the interval first."""
        if counted is None or self._history is None:
            return
        try:
            self._history.save(counted.record, previous=counted.previous)
        except VersionConflict:
            logger.info("another pass saved the teams' usage first; the next pass counts from it")
        except ServiceUnavailable as exc:
            logger.warning(
                "could not save the teams' usage; the next pass counts the interval", extra={"error": str(exc)}
            )
