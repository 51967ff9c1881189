"""What must hold after any pass, checked from the outside with plain arithmetic.

Shared by the property tests (random snapshots) and the simulation test (every pass of a run).
It runs the product's own invariant checker first (the one the simulator and the deployed pass
run), then the ordering and preemption rules below. Neither uses the scheduler's own ledger or
preemption code, so a bug there cannot hide itself.

`check_queue_against_sagemaker` compares the queue table with SageMaker's training jobs: it is shared
by the tests that drive the whole service (concurrent passes, injected faults).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from smq_lambda.domain.jobs.model import ATTEMPT_TAG, JOB_TAG, Job, demand_of
from smq_lambda.domain.jobs.states import LIVE_STATES, JobState
from smq_lambda.scheduling.actions import Action, ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.invariants import check_pass as product_invariants
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

RECLAIMABLE = (JobState.STARTING, JobState.RUNNING)
RELEASING = (JobState.PREEMPTING, JobState.STOPPING)


class Violation(AssertionError):
    pass


def check_pass(snapshot: Snapshot, config: SchedulerConfig, actions: Sequence[Action], now: datetime) -> None:
    """Raise Violation naming the first broken rule: the product's invariants
    (smq_lambda/scheduling/invariants.py: capacity, one placement, budgets, no idle wait), then the
    ordering and preemption rules only these tests check."""
    broken = product_invariants(snapshot, config, actions, now)
    if broken:
        raise Violation("; ".join(str(violation) for violation in broken))
    jobs = {job.name: job for job in snapshot.jobs}
    _one_action_per_job(actions)
    _actions_fit_states(jobs, actions, now)
    _preemptions_allowed(jobs, actions)
    _preemptions_minimal(snapshot, config, actions, now)
    _strict_order(snapshot, config, actions, now)
    _backfill_only_on_unusable_instances(snapshot, config, actions, now)
    _heads_helped(snapshot, config, actions, now)


def _one_action_per_job(actions: Sequence[Action]) -> None:
    names = Counter(action.job_name for action in actions)
    twice = [name for name, count in names.items() if count > 1]
    if twice:
        raise Violation(f"jobs with two actions: {twice}")


def _actions_fit_states(jobs: Mapping[str, Job], actions: Sequence[Action], now: datetime) -> None:
    for action in actions:
        job = jobs[action.job_name]
        if isinstance(action, StartJob):
            if job.state is not JobState.PENDING or action.attempt != job.next_attempt_number:
                raise Violation(f"bad start {action} of {job.state} job with {len(job.attempts)} attempts")
            if job.not_before is not None and job.not_before > now:
                raise Violation(f"{job.name} started during its backoff")
        elif isinstance(action, PreemptJob):
            attempt = job.current_attempt
            if job.state not in RECLAIMABLE or attempt is None or action.attempt != attempt.number:
                raise Violation(f"bad preemption {action} of a {job.state} job")
        elif isinstance(action, ExplainWait) and (job.state is not JobState.PENDING or action.reason == job.reason):
            raise Violation(f"needless explanation {action} of {job.name} ({job.state}, {job.reason!r})")


def usage(jobs: Iterable[Job], external: Mapping[str, int]) -> tuple[Counter[str], Counter[str]]:
    """(used, releasing) instances per pool."""
    used: Counter[str] = Counter(external)
    releasing: Counter[str] = Counter()
    for job in jobs:
        if job.state in (*RECLAIMABLE, *RELEASING):
            used.update(job.demand)
        if job.state in RELEASING:
            releasing.update(job.demand)
    return used, releasing


def _preemptions_allowed(jobs: Mapping[str, Job], actions: Sequence[Action]) -> None:
    for action in actions:
        if isinstance(action, PreemptJob):
            target, head = jobs[action.job_name], jobs[action.for_job]
            lower = target.priority < head.priority
            reclaimed = target.is_backfill and target.order > head.order
            if not (lower or reclaimed):
                raise Violation(f"{target.name} (p{target.priority}) may not be preempted for {head.name}")


def _covers(targets: Iterable[Job], lacks: Mapping[str, int]) -> bool:
    freed: Counter[str] = Counter()
    for job in targets:
        freed.update(job.demand)
    return all(freed[pool] >= missing for pool, missing in lacks.items())


def _preemptions_minimal(snapshot: Snapshot, config: SchedulerConfig, actions: Sequence[Action], now: datetime) -> None:
    """Each job's targets cover its lacks at its turn in queue order, and removing any one
    target leaves a pool short. The lacks counts stops in flight and those decided before, and
    the instances kept for the waiting jobs ahead that have their room (see `replay`)."""
    for job, lacks, targets in replay(snapshot, config, actions, now).groups:
        if not _covers(targets, lacks):
            raise Violation(f"preemptions for {job} do not cover {lacks}")
        for target in targets:
            if _covers([other for other in targets if other is not target], lacks):
                raise Violation(f"preempting {target.name} for {job} is not needed")


@dataclass
class Replay:
    groups: list[tuple[str, dict[str, int], list[Job]]]
    """(job, its lacks at its turn, the jobs preempted for it)."""
    backfills_over_reserved: list[str]
    """Backfill starts that took instances kept for a waiting job ahead."""


def replay(snapshot: Snapshot, config: SchedulerConfig, actions: Sequence[Action], now: datetime) -> Replay:
    """Walk the eligible pending jobs in queue order with the pass's actions at each one's turn. A
    waiting job has its room when stops in flight cover it (after what is kept for the jobs ahead)
    or jobs were preempted for it; its instances are then kept for it, and no later job may take
    them. A waiting job without room makes its pools stuck: after it, with backfill off, no later
    job of those pools has room kept (they wait behind it); with backfill on they still may."""
    jobs = {job.name: job for job in snapshot.jobs}
    starts = {action.job_name: action for action in actions if isinstance(action, StartJob)}
    preempted_for: dict[str, list[Job]] = {}
    for action in actions:
        if isinstance(action, PreemptJob):
            preempted_for.setdefault(action.for_job, []).append(jobs[action.job_name])
    used, releasing = usage(snapshot.jobs, snapshot.external_usage)
    stuck: set[str] = set()
    result = Replay([], [])
    for job in sorted((job for job in snapshot.jobs if _eligible(job, config, now)), key=lambda job: job.order):
        start = starts.get(job.name)
        if start is not None:
            if start.backfill and _lack(job, used, Counter(), config):
                result.backfills_over_reserved.append(job.name)
            used.update(job.demand)
            continue
        if _limited(job, config) & stuck and not config.backfill:
            stuck |= _limited(job, config)
            continue
        targets = preempted_for.get(job.name, [])
        if targets:
            result.groups.append((job.name, _lack(job, used, releasing, config), targets))
            for target in targets:
                releasing.update(target.demand)
        if targets or not _lack(job, used, releasing, config):
            used.update(job.demand)
        elif not _limited(job, config) & stuck:
            stuck |= _limited(job, config)
    return result


def _lack(head: Job, used: Counter[str], releasing: Counter[str], config: SchedulerConfig) -> dict[str, int]:
    lacks = {}
    for pool, count in head.demand.items():
        capacity = config.capacity(pool)
        if capacity is not None and count > capacity - used[pool] + releasing[pool]:
            lacks[pool] = count - (capacity - used[pool] + releasing[pool])
    return lacks


def _eligible(job: Job, config: SchedulerConfig, now: datetime) -> bool:
    """Pending and able to run: not in start backoff, not larger than a pool."""
    if job.state is not JobState.PENDING or (job.not_before is not None and job.not_before > now):
        return False
    return all(config.capacity(pool) is None or count <= config.capacity(pool) for pool, count in job.demand.items())


def _limited(job: Job, config: SchedulerConfig) -> set[str]:
    return {pool for pool in job.demand if config.capacity(pool) is not None}


def _strict_order(snapshot: Snapshot, config: SchedulerConfig, actions: Sequence[Action], now: datetime) -> None:
    """No start passes over an earlier waiting job of one of its limited pools, unless it is a backfill
    start with backfill on."""
    starts = {action.job_name: action for action in actions if isinstance(action, StartJob)}
    if not config.backfill and any(start.backfill for start in starts.values()):
        raise Violation("backfill start with backfill off")
    waiting_pools: set[str] = set()
    for job in sorted(snapshot.jobs, key=lambda job: job.order):
        if not _eligible(job, config, now):
            continue
        start = starts.get(job.name)
        if start is None:
            waiting_pools |= _limited(job, config)
        elif _limited(job, config) & waiting_pools and not start.backfill:
            raise Violation(f"{job.name} started ahead of a waiting job in {_limited(job, config) & waiting_pools}")


def _backfill_only_on_unusable_instances(
    snapshot: Snapshot, config: SchedulerConfig, actions: Sequence[Action], now: datetime
) -> None:
    """A backfill start, at the moment it is decided, takes only free instances that are not kept
    for a waiting job ahead of it."""
    over = replay(snapshot, config, actions, now).backfills_over_reserved
    if over:
        raise Violation(f"backfill {over} took instances kept for a job ahead")


def heads(snapshot: Snapshot, config: SchedulerConfig, started: Iterable[str], now: datetime) -> list[Job]:
    """Eligible pending jobs that wait and have no waiting job ahead of them in any of their pools."""
    started = set(started)
    headed: set[str] = set()
    result = []
    for job in sorted(snapshot.jobs, key=lambda job: job.order):
        if not _eligible(job, config, now) or job.name in started:
            continue
        if not _limited(job, config) & headed:
            result.append(job)
        headed |= _limited(job, config)
    return result


def _heads_helped(snapshot: Snapshot, config: SchedulerConfig, actions: Sequence[Action], now: datetime) -> None:
    """After the pass, every head either fits once the stops in flight land, or could not fit even if
    every job it may preempt were stopped: no head is left waiting on a job it could reclaim. With
    backfill this is what bounds a head's extra wait to one stop."""
    after = {job.name: job for job in snapshot.jobs}
    starts = {action.job_name: action for action in actions if isinstance(action, StartJob)}
    preempted = {action.job_name for action in actions if isinstance(action, PreemptJob)}
    live: list[tuple[Job, bool]] = []
    """(job, backfilled) of the live jobs after the pass that are not releasing."""
    for name, job in after.items():
        if name in starts:
            live.append((job, starts[name].backfill))
        elif job.state in RECLAIMABLE and name not in preempted:
            live.append((job, job.is_backfill))
    used, releasing = usage(snapshot.jobs, snapshot.external_usage)
    for name in starts:
        used.update(after[name].demand)
    for name in preempted:
        releasing.update(after[name].demand)
    for head in heads(snapshot, config, starts, now):
        lacks = _lack(head, used, releasing, config)
        if not lacks:
            continue
        reclaimable = [
            job for job, backfilled in live if job.priority < head.priority or (backfilled and job.order > head.order)
        ]
        if _covers(reclaimable, lacks):
            raise Violation(f"head {head.name} lacks {lacks} but could reclaim {[job.name for job in reclaimable]}")


# ---------------------------------------------------------------------- the queue against SageMaker

BUSY_STATUSES = ("InProgress", "Stopping")
"""SageMaker statuses in which a training job holds its instances."""


@dataclass(frozen=True)
class TrainingJobView:
    """A SageMaker training job as the checks see it: what it holds and which queue attempt it says
    it is (its `smq:job` / `smq:attempt` tags; None for a job started outside the queue)."""

    name: str
    status: str
    job: str | None
    attempt: int | None
    demand: Mapping[str, int]

    @classmethod
    def of(cls, name: str, status: str, request: Mapping[str, Any]) -> TrainingJobView:
        tags = {tag["Key"]: tag["Value"] for tag in request.get("Tags") or ()}
        attempt = tags.get(ATTEMPT_TAG, "")
        return cls(name, status, tags.get(JOB_TAG), int(attempt) if attempt.isdigit() else None, demand_of(request))

    @property
    def busy(self) -> bool:
        return self.status in BUSY_STATUSES


def check_queue_against_sagemaker(
    jobs: Iterable[Job],
    training_jobs: Iterable[TrainingJobView],
    capacity: Mapping[str, int],
    *,
    submitted: Iterable[str] = (),
    settled: bool = False,
) -> None:
    """Raise Violation listing every broken rule between the queue table and SageMaker.

    Always: no pool over-committed (live jobs in the table, busy training jobs in SageMaker), no job
    with two busy training jobs, every queue training job is one recorded attempt of its job (nothing
    started twice), every job in `submitted` still in the table, open attempts where the state says.
    With `settled` (after a reconciliation that nothing disturbed), the two sides also agree: each
    live job's current attempt is busy in SageMaker, and each busy training job is such an attempt.
    """
    jobs, training_jobs = list(jobs), list(training_jobs)
    broken = [
        *_queue_within_capacity(jobs, capacity),
        *_sagemaker_within_capacity(training_jobs, capacity),
        *_one_busy_attempt_per_job(training_jobs),
        *_training_jobs_are_recorded_attempts(jobs, training_jobs),
        *_no_job_lost(jobs, submitted),
        *_attempts_open_where_live(jobs),
    ]
    if settled:
        broken.extend(_sides_agree(jobs, training_jobs))
    if broken:
        raise Violation("; ".join(broken))


def sagemaker_violations(training_jobs: Iterable[TrainingJobView], capacity: Mapping[str, int]) -> list[str]:
    """The rules SageMaker's side alone must keep at every moment (for monitors that sample it)."""
    training_jobs = list(training_jobs)
    return [*_sagemaker_within_capacity(training_jobs, capacity), *_one_busy_attempt_per_job(training_jobs)]


def _over(used: Counter[str], capacity: Mapping[str, int], side: str) -> list[str]:
    return [f"{side}: {pool} uses {count} > {capacity[pool]}" for pool, count in sorted(used.items())
            if pool in capacity and count > capacity[pool]]  # fmt: skip


def _queue_within_capacity(jobs: list[Job], capacity: Mapping[str, int]) -> list[str]:
    used: Counter[str] = Counter()
    for job in jobs:
        if job.state in LIVE_STATES:
            used.update(job.demand)
    return _over(used, capacity, "queue")


def _sagemaker_within_capacity(training_jobs: list[TrainingJobView], capacity: Mapping[str, int]) -> list[str]:
    used: Counter[str] = Counter()
    for training_job in training_jobs:
        if training_job.busy:
            used.update(training_job.demand)
    return _over(used, capacity, "SageMaker")


def _one_busy_attempt_per_job(training_jobs: list[TrainingJobView]) -> list[str]:
    busy: dict[str, list[str]] = {}
    for training_job in training_jobs:
        if training_job.busy and training_job.job is not None:
            busy.setdefault(training_job.job, []).append(training_job.name)
    return [f"{job} has {len(names)} busy training jobs {sorted(names)}" for job, names in sorted(busy.items())
            if len(names) > 1]  # fmt: skip


def _training_jobs_are_recorded_attempts(jobs: list[Job], training_jobs: list[TrainingJobView]) -> list[str]:
    by_name = {job.name: job for job in jobs}
    broken = []
    for training_job in training_jobs:
        if training_job.job is None:
            continue
        job = by_name.get(training_job.job)
        names = {attempt.number: attempt.training_job_name for attempt in job.attempts} if job else {}
        if names.get(training_job.attempt) != training_job.name:
            broken.append(f"{training_job.name} is no recorded attempt of {training_job.job} (attempts: {names})")
    for job in jobs:
        names = [attempt.training_job_name for attempt in job.attempts]
        if len(set(names)) != len(names):
            broken.append(f"{job.name} records one training job for two attempts: {names}")
    return broken


def _no_job_lost(jobs: list[Job], submitted: Iterable[str]) -> list[str]:
    present = {job.name for job in jobs}
    return [f"{name} was submitted but is not in the table" for name in submitted if name not in present]


def _attempts_open_where_live(jobs: list[Job]) -> list[str]:
    broken = []
    for job in jobs:
        open_attempts = [attempt.number for attempt in job.attempts if attempt.is_open]
        expected = [job.attempts[-1].number] if job.state in LIVE_STATES and job.attempts else []
        if open_attempts != expected:
            broken.append(f"{job.name} is {job.state} with open attempts {open_attempts}")
    return broken


def _sides_agree(jobs: list[Job], training_jobs: list[TrainingJobView]) -> list[str]:
    by_name = {training_job.name: training_job for training_job in training_jobs}
    broken = []
    current = set()
    for job in jobs:
        attempt = job.current_attempt
        if job.state not in LIVE_STATES or attempt is None:
            continue
        current.add(attempt.training_job_name)
        training_job = by_name.get(attempt.training_job_name)
        if training_job is None or not training_job.busy:
            status = training_job.status if training_job else "no training job"
            broken.append(f"{job.name} is {job.state} but its attempt {attempt.training_job_name} is {status}")
    broken.extend(
        f"{training_job.name} is {training_job.status} but is no live job's current attempt"
        for training_job in training_jobs
        if training_job.busy and training_job.job is not None and training_job.name not in current
    )
    return broken
