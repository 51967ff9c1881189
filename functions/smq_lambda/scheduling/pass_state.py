"""What every kind of pass shares: the ledger, the actions decided so far, the live jobs still
standing, and how a pass explains, skips and preempts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

from smq_lambda.domain.model import Job
from smq_lambda.domain.outcomes import AttemptOutcome
from smq_lambda.scheduling import quota_reasons, reasons
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.aging import Boost
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.preemption import is_reclaimable_by, protection
from smq_lambda.scheduling.reasons import PoolView
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot


class PassState:
    """The state one pass builds up while it walks the pending jobs; dropped when the pass ends."""

    def __init__(
        self, snapshot: Snapshot, now: datetime, config: SchedulerConfig, ledger: Ledger, boosts: Mapping[str, Boost]
    ) -> None:
        self.now = now
        self.config = config
        self.ledger = ledger
        self.boosts = boosts
        self.actions: list[Action] = []
        self.heads: dict[str, Job] = {}
        """Per blocked pool, the first job that waits for it."""
        self.live: dict[str, Job] = {job.name: job for job in snapshot.jobs if job.is_live}
        """Live jobs not (yet) chosen for preemption in this pass."""

    def skip(self, job: Job) -> bool:
        """Jobs that cannot run now whatever the others do are explained and block nothing."""
        oversized = self.ledger.never_fits(job.demand)
        if oversized is not None:
            view = self.view(oversized, job.demand[oversized])
            self.explain(job, reasons.never_fits(view, configured=oversized in self.config.pools))
            return True
        if job.not_before is not None and job.not_before > self.now:
            self.explain(job, reasons.backoff(job.not_before, _refusal(job)))
            return True
        return False

    def admit(self, job: Job, *, reason: str, backfill: bool = False) -> None:
        self.actions.append(StartJob(job.name, job.next_attempt_number, self._aged(job, reason), backfill=backfill))
        self.ledger.take(job.demand)

    def explain(self, job: Job, reason: str) -> None:
        reason = self._aged(job, reason)
        if reason != job.reason:
            self.actions.append(ExplainWait(job.name, reason))

    def _aged(self, job: Job, reason: str) -> str:
        """The reason with what a pass adds to any: the job's aging, and a team tag that names no
        configured team (the job runs as unassigned)."""
        reason = quota_reasons.noting_team(reason, job.team, self.config.teams)
        boost = self.boosts.get(job.name)
        return reason if boost is None else f"{reason}; {boost.describe()}"

    def priority_candidates(self, head: Job, among: Callable[[Job], bool] = lambda _: True) -> tuple[list[Job], int]:
        """Live jobs `among` those allowed that may be stopped for `head` by the priority rule, and
        how many more would be but are protected (see `preemption.protection`)."""
        candidates, protected = [], 0
        for other in self.live.values():
            if not among(other) or not is_reclaimable_by(other, head):
                continue
            if not other.is_backfill and protection(other, self.now, self.config.preemption) is not None:
                protected += 1
            else:
                candidates.append(other)
        return candidates, protected

    def preempt(self, targets: Sequence[Job], for_job: Job, reason_for: Callable[[Job], str]) -> None:
        """Stop `targets` for `for_job`; their instances count as on their way back from now on."""
        limit = self.config.preemption.max_preemptions
        for target in targets:
            attempt = target.current_attempt
            assert attempt is not None, "preemption candidates have an attempt"
            times = target.attempt_outcomes.get(AttemptOutcome.PREEMPTED, 0) + 1
            note = None
            if limit is not None and times == limit:
                note = (
                    f"preempted {times} times (max_preemptions {limit}): from now on stopped only to give back "
                    f"capacity it borrowed, never for priority"
                )
            self.actions.append(PreemptJob(target.name, attempt.number, for_job.name, reason_for(target), note))
            del self.live[target.name]
        self.ledger.release(targets)

    def shortfall(self, job: Job) -> dict[str, int]:
        """Instances per pool `job` still lacks once the stops in flight land."""
        return {
            pool: missing
            for pool, count in job.demand.items()
            if (missing := self.ledger.shortfall(pool, count, counting_releasing=True)) > 0
        }

    def view(self, pool: str, need: int) -> PoolView:
        return PoolView(pool, need, self.ledger.free(pool), self.ledger.capacity(pool), self.ledger.releasing(pool))

    def views(self, demand: Mapping[str, int]) -> list[PoolView]:
        return [self.view(pool, count) for pool, count in demand.items()]

    def short_views(self, demand: Mapping[str, int]) -> list[PoolView]:
        """The pools of `demand` without the instances free right now."""
        return [self.view(pool, count) for pool, count in demand.items() if not self.ledger.fits({pool: count})]


def limited(pools: Iterable[str], ledger: Ledger) -> list[str]:
    return [pool for pool in pools if ledger.capacity(pool) is not None]


def _refusal(job: Job) -> str | None:
    """Why the last start was refused, kept in the backoff reason so the cause stays visible."""
    attempt = job.current_attempt
    return attempt.reason if attempt is not None and attempt.outcome == AttemptOutcome.REFUSED else None
