"""The scheduling policies a simulation can replay: smq's own pass and two baselines to judge it by.

- `smq`: the real `decide()` with the queue's configuration (pools, backfill).
- `fifo`: per-pool capacity in instances, submission order, strict (the first job that does not
  fit blocks the later jobs of its pools), never preempts. What a plain FIFO queue gives.
- `seed`: the reference scheduler of the article smq grew from (shared/seeds/priority-scheduler.md),
  rewritten from its description, limits included: one global capacity counted in jobs, not
  instances (the sum of the pools' instances); it considers only the first `capacity` pending jobs;
  preemption pairs the i-th waiting job with the i-th lowest running job and stops it when the
  waiting job's priority is strictly higher; stops in flight are assumed to make room for as many
  waiting jobs. Starting a job its pool has no room for makes SageMaker refuse it (the engine counts
  a refused start), and as the article handles no errors, the rest of that pass is lost. One
  deviation: a preempted job still stopping is not started again (the article would start a second
  SageMaker job for it; the simulator's job has one attempt at a time).

Only smq places a flexible job (any of its preferences, scheduling/placement.py); the baselines
have no placement: they run it at its first preference, as a queue that knows one instance type
per job would.

A policy is a function of the snapshot and the time, like `decide`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.replay.virtual_queue import PolicyFunction
from smq_lambda.scheduling.actions import Action, PreemptJob, StartJob
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.decide import Decision, decide_pass, order_pending
from smq_lambda.scheduling.invariants import Violation, check_pass
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

SEED_RUNNING_STATES = frozenset({JobState.STARTING, JobState.RUNNING})
"""The article's `InProgress`: SageMaker jobs it counts as running."""
SEED_STOPPING_STATES = frozenset({JobState.PREEMPTING, JobState.STOPPING})


class PolicyName(StrEnum):
    SMQ = "smq"
    FIFO = "fifo"
    SEED = "seed"


def policy(name: PolicyName, config: SchedulerConfig) -> PolicyFunction:
    """The pass of policy `name` over the pools of `config` (only smq reads its other settings)."""
    if name is PolicyName.SMQ:
        return SmqPass(config)
    if name is PolicyName.FIFO:
        return lambda snapshot, now: fifo(snapshot, config.pools)
    return lambda snapshot, now: seed(snapshot, sum(config.pools.values()))


class SmqPass:
    """smq's pass (`decide_pass`) as a policy, keeping its last decision: what it returns beside the
    actions (the warm pools it ends, the jobs held for budget) is the engine's to apply. Every
    decision is checked against the invariants (scheduling/invariants.py), as the deployed pass's
    is: what breaks one is kept in `violations`."""

    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config
        self.last: Decision | None = None
        self.violations: list[tuple[datetime, Violation]] = []

    def __call__(self, snapshot: Snapshot, now: datetime) -> list[Action]:
        self.last = decide_pass(snapshot, now, self.config)
        found = check_pass(snapshot, self.config, self.last.actions, now, budget_held=self.last.budget_held)
        self.violations.extend((now, violation) for violation in found)
        return list(self.last.actions)


def fifo(snapshot: Snapshot, pools: Mapping[str, int]) -> list[Action]:
    """Start pending jobs in submission order while they fit; the first that does not fit holds
    back every later job of its pools."""
    ledger = Ledger.measure(snapshot, SchedulerConfig(pools=pools))
    blocked: set[str] = set()
    actions: list[Action] = []
    pending = sorted(
        (job for job in snapshot.jobs if job.state is JobState.PENDING),
        key=lambda job: (job.submitted_at, job.name),
    )
    for job in pending:
        if blocked.isdisjoint(job.demand) and ledger.fits(job.demand):
            actions.append(_start(job, "fifo: first in line and it fits"))
            ledger.take(job.demand)
        else:
            blocked.update(job.demand)
    return actions


def seed(snapshot: Snapshot, capacity: int) -> list[Action]:
    """The article's `manage_queue`, over jobs instead of its DynamoDB table and SageMaker lists."""
    pending = order_pending(snapshot)[:capacity]
    if not pending:
        return []
    running = [job for job in snapshot.jobs if job.state in SEED_RUNNING_STATES]
    stopping = sum(job.state in SEED_STOPPING_STATES for job in snapshot.jobs)
    free_slots = capacity - len(running) - stopping
    to_start = max(min(len(pending), free_slots), 0)
    actions: list[Action] = [_start(job, "seed: a free slot") for job in pending[:to_start]]
    still_pending = pending[to_start:]
    to_test = len(still_pending) - stopping
    if to_test <= 0:
        return actions
    waiting = still_pending[stopping:]
    lowest_first = sorted(running, key=lambda job: job.priority)
    for index in range(min(to_test, len(waiting), len(lowest_first))):
        head, victim = waiting[index], lowest_first[index]
        if head.priority <= victim.priority:
            break
        actions.append(PreemptJob(victim.name, _attempt(victim), head.name, f"seed: preempted for {head.name}"))
    return actions


def _start(job: Job, reason: str) -> StartJob:
    """The start of a pending job where it is listed: a flexible job at its first preference."""
    first = job.placements[0] if job.placements else None
    return StartJob(job.name, job.next_attempt_number, reason, placement=first)


def _attempt(job: Job) -> int:
    attempt = job.current_attempt
    assert attempt is not None, "running jobs have an attempt"
    return attempt.number
