"""What a pass builds up while it walks the pending jobs, and the verbs every phase uses on it:
admit, wait, explain, preempt. Dropped when the pass ends."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.scheduling import quota_reasons, reasons
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.holds import Held, HoldKind
from smq_lambda.scheduling.preemption import last_preemption_note, protection
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot, held_warm_pools
from smq_lambda.scheduling.warm_book import WarmBook


class PassHooks(Protocol):
    """What the state asks of the features plugged into the pass (scheduling/features.py)."""

    def gate(self, state: PassState, job: Job, placement: Placement | None) -> Held | None: ...

    def admitted(self, state: PassState, job: Job, placement: Placement | None) -> None: ...


class PassState:
    """The ledger, the actions decided so far, the waiting heads and the live jobs still standing."""

    def __init__(
        self,
        snapshot: Snapshot,
        now: datetime,
        config: SchedulerConfig,
        ledger: Ledger,
        suffixes: Mapping[str, str] | None = None,
        notes: Mapping[str, str] | None = None,
        features: Sequence[PassHooks] = (),
    ) -> None:
        """`suffixes`: per job, what every reason written for it ends with (its aging). `notes`: per
        job, what its wait reason adds (when a spot job may go on demand). `features`: the features
        plugged into this pass, whose gates and admissions the state asks and tells."""
        self.now = now
        self.config = config
        self.ledger = ledger
        self.suffixes = suffixes or {}
        self.notes = notes or {}
        self.features = features
        self.team_usage = snapshot.team_usage
        self.actions: list[Action] = []
        self.heads: dict[str, Candidate] = {}
        """Per blocked pool, the first job that waits for it."""
        self.team_heads: defaultdict[str, dict[str, Candidate]] = defaultdict(dict)
        """Per team and pool, the team's first waiting job (without quotas, the one group's are `heads`)."""
        self.stuck: defaultdict[str, set[str]] = defaultdict(set)
        """Per team, the pools where its waiting head has no room even by preemption: its later jobs
        start there only by backfill."""
        self.live: dict[str, Job] = {job.name: job for job in snapshot.jobs if job.is_live}
        """Live jobs not (yet) chosen for preemption in this pass."""
        self._live_of_team: defaultdict[str, dict[str, Job]] = defaultdict(dict)
        for job in self.live.values():
            self._live_of_team[ledger.team(job)][job.name] = job
        self._protected: dict[str, bool] = {}
        self.explained: set[str] = set()
        """Jobs whose reason this pass wrote, or found current: the read side shows it as it is."""
        self.held: dict[str, HoldKind] = {}
        """Jobs a gate set aside in this pass, by its kind (scheduling/gates.py)."""
        self.warm = WarmBook(held_warm_pools(snapshot))
        """The warm pools held, reused and ended in this pass (`warm_pools`)."""

    def feature_gate(self, job: Job, placement: Placement | None) -> Held | None:
        """The first feature gate that holds `job` at `placement` now, or None."""
        return next((held for feature in self.features if (held := feature.gate(self, job, placement))), None)

    def regated(self, candidate: Candidate) -> bool:
        """A feature gate holds `candidate` when a later phase decides it (the walk asked the gates
        already; starts since then count, against a budget say): it is held, explained, blocks
        nothing and nothing is stopped for it."""
        held = self.feature_gate(candidate.job, candidate.placement)
        if held is not None:
            self.hold(candidate, held)
        return held is not None

    def hold(self, job: Job | Candidate, held: Held) -> None:
        """Set `job` aside by a gate: explained, it heads no pool."""
        self.held[job.name] = held.kind
        self.explain(job, held.reason)
        self._unhead(job)

    @property
    def budget_held(self) -> frozenset[str]:
        """The jobs a hold budget set aside (`Decision.budget_held`)."""
        return frozenset(name for name, kind in self.held.items() if kind is HoldKind.BUDGET)

    def admit(self, job: Candidate, *, reason: str, backfill: bool = False) -> None:
        """Start `job`: it takes its instances and holds back nothing. With quotas a later phase may
        admit a job after others of its team started in this pass: when a feature gate holds it then
        (its team's hold budget no longer covers it), it is held instead (and holds back nothing)."""
        if self.regated(job):
            return
        team = self.ledger.team(job)
        if job.index and job.placement is not None:
            reason = f"{reason}; {reasons.placed(job.index, len(job.job.placements), job.placement.describe())}"
        self.actions.append(
            StartJob(
                job.name,
                job.job.next_attempt_number,
                self._aged(job, reason),
                backfill=backfill,
                placement=job.placement,
            )
        )
        for feature in self.features:
            feature.admitted(self, job.job, job.placement)
        self.ledger.take(job.demand, team)
        self._unhead(job)

    def _unhead(self, job: Job | Candidate) -> None:
        """`job` no longer waits: it heads no pool, of the pool or of its team."""
        team = self.ledger.team(job)
        for pool in job.demand:
            if self.team_heads[team].get(pool) is job:
                del self.team_heads[team][pool]
            if self.heads.get(pool) is job:
                del self.heads[pool]

    def wait(self, job: Candidate) -> None:
        """`job` waits: it heads every limited pool (of the pool and of its team) not yet headed."""
        team = self.ledger.team(job)
        for pool in limited(job.demand, self.ledger):
            self.team_heads[team].setdefault(pool, job)
            self.heads.setdefault(pool, job)

    def blocked(self, job: Candidate) -> list[str]:
        """The pools of `job` where an earlier job of its team waits."""
        heads = self.team_heads[self.ledger.team(job)]
        return [pool for pool in job.demand if pool in heads]

    def is_first(self, job: Candidate) -> bool:
        """`job` is its team's first waiting job of one of its pools: only its reason is written."""
        heads = self.team_heads[self.ledger.team(job)]
        return any(heads.get(pool) is job for pool in job.demand)

    def explain(self, job: Job | Candidate, reason: str) -> None:
        """`job`'s reason is `reason` as of this pass (`explained`), written when it changed."""
        self.explained.add(job.name)
        reason = self._aged(job, reason)
        if note := self.notes.get(job.name):
            reason = f"{reason}; {note}"
        if reason != job.reason:
            self.actions.append(ExplainWait(job.name, reason))

    def _aged(self, job: Job | Candidate, reason: str) -> str:
        """The reason with what a pass adds to any: the job's aging, and a team tag that names no
        configured team (the job runs as unassigned)."""
        reason = quota_reasons.noting_team(reason, job.team, self.config.teams)
        suffix = self.suffixes.get(job.name)
        return reason if suffix is None else f"{reason}; {suffix}"

    def live_of_team(self, team: str) -> Iterable[Job]:
        """The live jobs of `team` still standing, in snapshot order: the priority rule looks only
        there, so it need not walk every live job for every head."""
        return self._live_of_team[team].values()

    def protected(self, job: Job) -> bool:
        """The preemption rules protect live `job` from the priority rule now
        (`preemption.protection`): asked once per job and pass, however many heads ask."""
        known = self._protected.get(job.name)
        if known is None:
            known = self._protected[job.name] = protection(job, self.now, self.config.preemption) is not None
        return known

    def stand_down(self, job: Job) -> None:
        """`job`, live, is being stopped in this pass: no later rule may choose it again."""
        del self.live[job.name]
        del self._live_of_team[self.ledger.team(job)][job.name]

    def preempt(self, targets: Sequence[Job], for_job: Candidate, reason_for: Callable[[Job], str]) -> None:
        """Stop `targets` for `for_job`; their instances count as on their way back from now on."""
        for target in targets:
            attempt = target.current_attempt
            assert attempt is not None, "preemption candidates have an attempt"
            note = last_preemption_note(target, self.config.preemption)
            self.actions.append(PreemptJob(target.name, attempt.number, for_job.name, reason_for(target), note))
            self.stand_down(target)
        self.ledger.release(targets)


def limited(pools: Iterable[str], ledger: Ledger) -> list[str]:
    return [pool for pool in pools if ledger.capacity(pool) is not None]
