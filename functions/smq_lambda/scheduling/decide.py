"""One scheduling pass: which pending jobs start, which live jobs are stopped, and why the rest wait.

A pass is four phases, each a verb:

1. measure usage: a ledger of used, releasing and free instances per pool (see `capacity`);
2. order pending jobs by the one queue order (priority desc, submission asc, name);
3. for each pending job in that order: admit it if it fits and no job ahead of it waits for its
   pools, backfill it onto instances the waiting head cannot use yet (when backfill is on), make it
   the head of its pools and nominate preemption targets for it, or
4. explain why it waits, when that is news: a job that is admitted, backfilled, refused, in
   backoff, too large for its pool or the head of a pool gets its reason written. A job that merely
   waits behind a head gets none: its position and "N jobs ahead" change with every job that starts
   or arrives, so they are computed when someone reads the job (`reasons.queued`), never written to
   every waiting job on every pass.

A pass may see only the first pending jobs of each pool (see `window`): the jobs that could start,
the head, and a look-ahead behind it. Every decision depends only on jobs ahead of the one decided
(and on the live jobs, all of which are seen), so deciding over that prefix decides its jobs exactly
as over the whole queue.

Strict order: the first pending job that waits is the head of every (limited) pool it needs, and
no later job needing one of those pools starts, except by backfill. Jobs in start backoff and jobs
larger than their pool are explained and skipped; they block nothing, so one bad job never holds
up the queue. Pools never block each other.

Actions come out in the order they were decided (the starts, stops and wait of one job together),
and later decisions in the pass see earlier ones: a start takes its instances, a preemption counts
as releasing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.model import Job
from smq_lambda.domain.outcomes import AttemptOutcome
from smq_lambda.domain.states import JobState
from smq_lambda.scheduling import reasons
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.preemption import is_reclaimable_by, select_targets
from smq_lambda.scheduling.reasons import PoolView
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot


@dataclass(frozen=True)
class Decision:
    actions: list[Action]
    heads: Mapping[str, str]
    """Per blocked pool, the name of the first job that waits for it: readers of a waiting job
    learn from it whether the job's stored reason is current (a head's is) or is computed on read."""


def decide(snapshot: Snapshot, now: datetime, config: SchedulerConfig) -> list[Action]:
    """The actions of one pass over `snapshot` at `now`. Pure: reads its arguments, returns actions."""
    return decide_pass(snapshot, now, config).actions


def decide_pass(snapshot: Snapshot, now: datetime, config: SchedulerConfig) -> Decision:
    """`decide`, with the heads the pass found."""
    ledger = Ledger.measure(snapshot, config)  # 1. measure usage
    pending = order_pending(snapshot)  # 2. order pending jobs
    scheduling_pass = _Pass(snapshot, now, config, ledger)
    for job in pending:  # 3, 4. admit, backfill, nominate preemptions, explain
        scheduling_pass.consider(job)
    heads = {pool: job.name for pool, job in scheduling_pass.heads.items()}
    return Decision(scheduling_pass.actions, heads)


def order_pending(snapshot: Snapshot) -> list[Job]:
    return sorted((job for job in snapshot.jobs if job.state is JobState.PENDING), key=lambda job: job.order)


class _Pass:
    """The state one pass builds up while it walks the pending jobs; dropped when the pass ends."""

    def __init__(self, snapshot: Snapshot, now: datetime, config: SchedulerConfig, ledger: Ledger) -> None:
        self.now = now
        self.config = config
        self.ledger = ledger
        self.actions: list[Action] = []
        self.heads: dict[str, Job] = {}
        """Per blocked pool, the first job that waits for it."""
        self.live: dict[str, Job] = {job.name: job for job in snapshot.jobs if job.is_live}
        """Live jobs not (yet) chosen for preemption in this pass."""
        self.stuck: set[str] = set()
        """Pools where a waiting job has no room even by preemption: later jobs start there only by
        backfill. In the other headed pools every waiting job has its instances kept for it (taken
        in the ledger), so the next one may claim room of its own."""

    def consider(self, job: Job) -> None:
        """Admit, backfill, nominate preemptions for, or explain one pending job (in queue order)."""
        if self._skip(job):
            return
        blocked = [pool for pool in job.demand if pool in self.heads]
        stuck = [pool for pool in blocked if pool in self.stuck]
        fits = self.ledger.fits(job.demand)
        if not blocked and fits:
            self._admit(job, backfill=False, reason=reasons.fits(self._views(job.demand)))
        elif not stuck and not fits:
            self._nominate(job)
        elif not stuck and self.config.backfill:
            head = self.heads[blocked[0]]
            self._admit(job, backfill=True, reason=reasons.beside_reserved(self._views(job.demand), head.name))
        elif not stuck:
            self._queue(job)
            self.ledger.take(job.demand)
        elif self.config.backfill and fits:
            head = self.heads[stuck[0]]
            self._admit(
                job, backfill=True, reason=reasons.backfill(self._views(job.demand), head.name, self._shortfall(head))
            )
        elif self.config.backfill:
            self._make_room_to_backfill(job, self.heads[stuck[0]])
        else:
            self._queue(job)
            self._stick(job)

    def _skip(self, job: Job) -> bool:
        """Jobs that cannot run now whatever the others do are explained and block nothing."""
        oversized = self.ledger.never_fits(job.demand)
        if oversized is not None:
            view = self._view(oversized, job.demand[oversized])
            self._explain(job, reasons.never_fits(view, configured=oversized in self.config.pools))
            return True
        if job.not_before is not None and job.not_before > self.now:
            self._explain(job, reasons.backoff(job.not_before, _refusal(job)))
            return True
        return False

    def _admit(self, job: Job, *, backfill: bool, reason: str) -> None:
        self.actions.append(StartJob(job.name, job.next_attempt_number, reason, backfill=backfill))
        self.ledger.take(job.demand)

    def _nominate(self, head: Job) -> None:
        """`head` does not fit and every job waiting ahead of it in its pools has its room: lower
        jobs are stopped for it unless stops in flight already cover it, and the instances it waits
        for are kept for it. Without room even then, it is stuck: later jobs of its pools start
        only by backfill. Only the first job waiting for a pool gets its reason written; a reader
        of a later one is told its position (see the module docstring)."""
        self._queue(head)
        shortfall = self._shortfall(head)
        first = any(self.heads[pool] is head for pool in head.demand if pool in self.heads)
        if shortfall and not self._preempt_for(head, shortfall):
            short = next(iter(shortfall))
            if first:
                self._explain(head, reasons.no_room(self._view(short, head.demand[short])))
            self._stick(head)
            return
        short_now = [
            self._view(pool, count) for pool, count in head.demand.items() if not self.ledger.fits({pool: count})
        ]
        if first:
            self._explain(head, reasons.awaiting_release(short_now))
        self.ledger.take(head.demand)

    def _make_room_to_backfill(self, job: Job, head: Job) -> None:
        """`job` waits behind a stuck head and does not fit: jobs it outranks are stopped so that it
        can be backfilled once they are gone. They rank below the head too, so their instances
        would not have let the head start."""
        shortfall = self._shortfall(job)
        if shortfall and not self._preempt_for(job, shortfall):
            self._queue(job)
            return
        self._explain(job, reasons.backfill_awaiting_release(self._views(job.demand), head.name))
        self.ledger.take(job.demand)

    def _preempt_for(self, job: Job, shortfall: Mapping[str, int]) -> bool:
        """Stop the fewest live jobs `job` may reclaim that cover `shortfall`; False when none do."""
        candidates = [other for other in self.live.values() if is_reclaimable_by(other, job)]
        targets = select_targets(shortfall, candidates)
        if targets is None:
            return False
        for target in targets:
            reason = reasons.preempted(job.name, job.priority, target.priority, shortfall, reclaimed=target.is_backfill)
            self.actions.append(PreemptJob(target.name, _attempt(target), job.name, reason))
            del self.live[target.name]
        self.ledger.release(targets)
        return True

    def _stick(self, job: Job) -> None:
        self.stuck.update(pool for pool in job.demand if self.ledger.capacity(pool) is not None)

    def _queue(self, job: Job) -> None:
        """`job` waits: it heads every limited pool not yet headed."""
        for pool in job.demand:
            if self.ledger.capacity(pool) is not None:
                self.heads.setdefault(pool, job)

    def _shortfall(self, job: Job) -> dict[str, int]:
        """Instances per pool `job` still lacks once the stops in flight land."""
        return {
            pool: missing
            for pool, count in job.demand.items()
            if (missing := self.ledger.shortfall(pool, count, counting_releasing=True)) > 0
        }

    def _explain(self, job: Job, reason: str) -> None:
        if reason != job.reason:
            self.actions.append(ExplainWait(job.name, reason))

    def _view(self, pool: str, need: int) -> PoolView:
        return PoolView(pool, need, self.ledger.free(pool), self.ledger.capacity(pool), self.ledger.releasing(pool))

    def _views(self, demand: Mapping[str, int]) -> list[PoolView]:
        return [self._view(pool, count) for pool, count in demand.items()]


def _attempt(job: Job) -> int:
    attempt = job.current_attempt
    assert attempt is not None, "reclaimable jobs have an attempt"
    return attempt.number


def _refusal(job: Job) -> str | None:
    """Why the last start was refused, kept in the backoff reason so the cause stays visible."""
    attempt = job.current_attempt
    return attempt.reason if attempt is not None and attempt.outcome == AttemptOutcome.REFUSED else None
