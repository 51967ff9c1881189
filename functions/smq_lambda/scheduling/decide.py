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

With team quotas configured the pass is `quota_pass.QuotaPass` instead: the same verbs per team,
then borrowing. Either pass orders pending jobs by their aged priority (see `aging`), and neither
preempts for priority a job the preemption rules protect (see `preemption.protection`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from smq_lambda.domain.model import Job
from smq_lambda.domain.states import JobState
from smq_lambda.scheduling import reasons
from smq_lambda.scheduling.actions import Action
from smq_lambda.scheduling.aging import Boost, aged
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.pass_state import PassState, limited
from smq_lambda.scheduling.preemption import select_targets
from smq_lambda.scheduling.quota_pass import QuotaPass
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
    pending, boosts = aged(order_pending(snapshot), now, config.aging)
    pending.sort(key=lambda job: job.order)  # 2. order pending jobs
    if config.teams.enabled:
        quota_pass = QuotaPass(snapshot, now, config, ledger, boosts)
        quota_pass.run(pending)
        return Decision(quota_pass.actions, {pool: job.name for pool, job in quota_pass.heads.items()})
    scheduling_pass = _Pass(snapshot, now, config, ledger, boosts)
    for job in pending:  # 3, 4. admit, backfill, nominate preemptions, explain
        scheduling_pass.consider(job)
    return Decision(scheduling_pass.actions, {pool: job.name for pool, job in scheduling_pass.heads.items()})


def order_pending(snapshot: Snapshot) -> list[Job]:
    return sorted((job for job in snapshot.jobs if job.state is JobState.PENDING), key=lambda job: job.order)


class _Pass(PassState):
    """One priority order per pool (no quotas)."""

    def __init__(
        self, snapshot: Snapshot, now: datetime, config: SchedulerConfig, ledger: Ledger, boosts: Mapping[str, Boost]
    ) -> None:
        super().__init__(snapshot, now, config, ledger, boosts)
        self.stuck: set[str] = set()
        """Pools where a waiting job has no room even by preemption: later jobs start there only by
        backfill. In the other headed pools every waiting job has its instances kept for it (taken
        in the ledger), so the next one may claim room of its own."""

    def consider(self, job: Job) -> None:
        """Admit, backfill, nominate preemptions for, or explain one pending job (in queue order)."""
        if self.skip(job):
            return
        blocked = [pool for pool in job.demand if pool in self.heads]
        stuck = [pool for pool in blocked if pool in self.stuck]
        fits = self.ledger.fits(job.demand)
        if not blocked and fits:
            self.admit(job, reason=reasons.fits(self.views(job.demand)))
        elif not stuck and not fits:
            self._nominate(job)
        elif not stuck and self.config.backfill:
            head = self.heads[blocked[0]]
            self.admit(job, backfill=True, reason=reasons.beside_reserved(self.views(job.demand), head.name))
        elif not stuck:
            self._queue(job)
            self.ledger.take(job.demand)
        elif self.config.backfill and fits:
            head = self.heads[stuck[0]]
            reason = reasons.backfill(self.views(job.demand), head.name, self.shortfall(head))
            self.admit(job, backfill=True, reason=reason)
        elif self.config.backfill:
            self._make_room_to_backfill(job, self.heads[stuck[0]])
        else:
            self._queue(job)
            self.stuck.update(limited(job.demand, self.ledger))

    def _nominate(self, head: Job) -> None:
        """`head` does not fit and every job waiting ahead of it in its pools has its room: lower
        jobs are stopped for it unless stops in flight already cover it, and the instances it waits
        for are kept for it. Without room even then, it is stuck: later jobs of its pools start
        only by backfill. Only the first job waiting for a pool gets its reason written; a reader
        of a later one is told its position (see the module docstring)."""
        self._queue(head)
        shortfall = self.shortfall(head)
        first = any(self.heads[pool] is head for pool in head.demand if pool in self.heads)
        if shortfall:
            protected = self._preempt_for(head, shortfall)
            if protected is not None:
                short = next(iter(shortfall))
                if first:
                    self.explain(head, reasons.no_room(self.view(short, head.demand[short]), protected))
                self.stuck.update(limited(head.demand, self.ledger))
                return
        if first:
            self.explain(head, reasons.awaiting_release(self.short_views(head.demand)))
        self.ledger.take(head.demand)

    def _make_room_to_backfill(self, job: Job, head: Job) -> None:
        """`job` waits behind a stuck head and does not fit: jobs it outranks are stopped so that it
        can be backfilled once they are gone. They rank below the head too, so their instances
        would not have let the head start."""
        shortfall = self.shortfall(job)
        if shortfall and self._preempt_for(job, shortfall) is not None:
            self._queue(job)
            return
        self.explain(job, reasons.backfill_awaiting_release(self.views(job.demand), head.name))
        self.ledger.take(job.demand)

    def _preempt_for(self, job: Job, shortfall: Mapping[str, int]) -> int | None:
        """Stop the fewest live jobs `job` may reclaim that cover `shortfall`. None when done; when
        even all of them would not cover it, nothing is stopped and the count of the jobs the
        preemption rules protected is returned."""
        candidates, protected = self.priority_candidates(job)
        targets = select_targets(shortfall, candidates)
        if targets is None:
            return protected
        self.preempt(
            targets,
            job,
            lambda target: reasons.preempted(
                job.name, job.priority, target.priority, shortfall, reclaimed=target.is_backfill
            ),
        )
        return None

    def _queue(self, job: Job) -> None:
        """`job` waits: it heads every limited pool not yet headed."""
        for pool in limited(job.demand, self.ledger):
            self.heads.setdefault(pool, job)
