"""Who may be stopped to make room for a waiting job, and the smallest set that makes the room.

One selection serves every rule that stops jobs: priority preemption, the reclaim of borrowed
capacity, and the reclaim of backfilled jobs. Each rule names its candidates and orders them by a
key of its own:

* `preemption_order` (priority preemption, and backfilled jobs reclaimed by a job ahead of them):
  1. backfilled jobs first: they run on instances a job ahead of them was only lent out;
  2. lowest priority first;
  3. least work lost first (`least_progress_first`): the latest start of the current attempt;
  4. name, so equal candidates always come out in the same order.
* `least_progress_first` alone (reclaim): borrowers lose the least work first, whatever their
  priority, and no team is taken below its quota (the rule's `eligible`).

Candidates are taken in that order until every short pool is covered, then the chosen ones are
walked in reverse and any whose removal still leaves every pool covered is dropped (Kueue's
add-back step), so the result is minimal: removing any one target leaves a pool short.

Jobs that ran less than the minimum runtime, or were preempted `max_preemptions` times already, are
protected from preemption for priority (see `protection`); a backfilled job reclaimed by a job ahead
of it and a job borrowing another team's quota are never protected: they ran on lent capacity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from smq_lambda.domain.config.teams import PreemptionRules
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.scheduling.candidate import Candidate

RECLAIMABLE_STATES = frozenset({JobState.STARTING, JobState.RUNNING})
"""Live states whose instances are not yet on their way back."""


def is_reclaimable_by(candidate: Job, head: Job | Candidate) -> bool:
    """A live job may be stopped for `head` when its priority is strictly lower, or when it was
    backfilled and comes after `head` in the queue order (equal priority included)."""
    if candidate.state not in RECLAIMABLE_STATES or candidate.current_attempt is None:
        return False
    return candidate.priority < head.priority or (candidate.is_backfill and candidate.order > head.order)


def last_preemption_note(target: Job, rules: PreemptionRules) -> str | None:
    """What a preemption of `target` notes when it is the last the priority rule may make
    (`max_preemptions`); None otherwise."""
    limit = rules.max_preemptions
    times = target.attempt_outcomes.get(AttemptOutcome.PREEMPTED, 0) + 1
    if limit is None or times != limit:
        return None
    return (
        f"preempted {times} times (max_preemptions {limit}): from now on stopped only to give back "
        f"capacity it borrowed, never for priority"
    )


def protection(candidate: Job, now: datetime, rules: PreemptionRules) -> str | None:
    """Why `candidate` may not be stopped for a higher-priority job, in words; None when it may."""
    attempt = candidate.current_attempt
    if attempt is not None and now - attempt.started_at < timedelta(seconds=rules.min_runtime_s):
        return f"started less than {_duration(rules.min_runtime_s)} ago"
    preemptions = candidate.attempt_outcomes.get(AttemptOutcome.PREEMPTED, 0)
    if rules.max_preemptions is not None and preemptions >= rules.max_preemptions:
        return f"preempted {preemptions} times already"
    return None


def _duration(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def least_progress_first(job: Job) -> tuple[float, str]:
    """The latest start of the current attempt first (its freshest progress), then name."""
    attempt = job.current_attempt
    started = attempt.started_at.timestamp() if attempt is not None else float("-inf")
    return (-started, job.name)


def preemption_order(job: Job) -> tuple[bool, int, float, str]:
    """Backfilled jobs first, then lowest priority, then `least_progress_first`."""
    return (not job.is_backfill, job.priority, *least_progress_first(job))


def covers(jobs: Iterable[Job], lacks: Mapping[str, int]) -> bool:
    """Stopping `jobs` frees at least the missing instances of every short pool."""
    freed: dict[str, int] = dict.fromkeys(lacks, 0)
    for job in jobs:
        for pool in lacks:
            freed[pool] += job.demand.get(pool, 0)
    return all(freed[pool] >= missing for pool, missing in lacks.items())


def select_targets(
    lacks: Mapping[str, int],
    candidates: Iterable[Job],
    order: Callable[[Job], Any] = preemption_order,
    eligible: Callable[[Job, Sequence[Job]], bool] = lambda _job, _chosen: True,
) -> Sequence[Job] | None:
    """The minimal set of candidates, taken in `order`, that covers `lacks`; None when even
    all of them together would not (then nothing is worth stopping). `eligible`: whether a
    candidate may still be taken beside those already chosen (a reclaim takes no team below its
    quota)."""
    useful = sorted((job for job in candidates if any(job.demand.get(pool, 0) for pool in lacks)), key=order)
    chosen: list[Job] = []
    for job in useful:
        if covers(chosen, lacks):
            break
        if eligible(job, chosen):
            chosen.append(job)
    return minimal(chosen, lacks)


def minimal(chosen: Sequence[Job], lacks: Mapping[str, int]) -> Sequence[Job] | None:
    """`chosen` without the jobs it does not need (walked in reverse: Kueue's add-back step);
    None when even all of them do not cover `lacks`."""
    if not covers(chosen, lacks):
        return None
    for job in reversed(list(chosen)):
        rest = [other for other in chosen if other is not job]
        if covers(rest, lacks):
            chosen = rest
    return chosen
