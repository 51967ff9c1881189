"""Jobs and attempts as the scheduler sees them, and the facts derived from a CreateTrainingJob request."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import LIVE_STATES, JobState
from smq_lambda.domain.jobs.whereabouts import Whereabouts
from smq_lambda.domain.placements.placement import Placement, listing_demand, placements_of
from smq_lambda.domain.placements.purchase import Purchase

PRIORITY_TAG = "priority"
MIN_PRIORITY = -1_000_000
MAX_PRIORITY = 1_000_000
JOB_TAG = "smq:job"
ATTEMPT_TAG = "smq:attempt"
STACK_TAG = "smq:stack"
"""The name of the smq stack that started the attempt: several stacks may share an account."""
ATTEMPT_NONCE_BYTES = 6
"""Random bytes in every attempt name (12 hex characters): the next name cannot be guessed from the
ones `GET /jobs` shows, so nobody can create it first."""
TRAINING_JOB_NAME_MAX = 63
TRAINING_JOB_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
JOB_ID_PATTERN = re.compile(r"^[a-zA-Z0-9-]{1,64}$")
"""What a job id may look like (the queue issues uuid4 hex): never a '#', short enough for a key."""

MAX_INLINE_ATTEMPTS = 20
"""Attempts a job keeps in full, the most recent ones (the current one always among them).

Each start adds an attempt, so a job preempted or refused for days would otherwise grow its item
past DynamoDB's 400 KB limit and could never be saved again. Older attempts are folded into counts
(`earlier_attempts`, `earlier_outcomes`) that keep the numbering, and so the SageMaker names,
unique. 20 tells a job's recent story in full (its last preemptions or refusals) for at most about
26 KB of the item (reasons are stored up to 1,024 characters)."""
MAX_HISTORY = 20
"""Notable changes (a priority change, who made it) a job keeps, the most recent ones."""
MAX_EARLIER_JOBS = 20
"""Earlier jobs of the same name a job lists (newest first); each stays readable until its TTL."""


@dataclass(frozen=True)
class Attempt:
    """One SageMaker training job started for a queued job."""

    number: int
    training_job_name: str
    started_at: datetime
    ended_at: datetime | None = None
    outcome: AttemptOutcome | None = None
    reason: str | None = None
    backfill: bool = False
    """Started on instances a waiting job ahead of it could not use yet; reclaimed first."""
    warned_at: datetime | None = None
    """When the owner was warned of the attempt's low GPU utilization (`idle.warn_below_percent`):
    at most once per attempt."""
    placement: Placement | None = None
    """Where the pass placed the attempt (domain/placements/placement.py), recorded before SageMaker is asked to
    create it: the one source, from then on, of the request sent, what the attempt holds while it
    starts, runs and stops (also once its job has moved on), its price and what is learned from it.
    None only for instance groups (they hold `Job.demand`) and for attempts of an older release."""
    keep_alive_s: int | None = None
    """The KeepAlivePeriodInSeconds the queue sent (0: removed); None: the request's own, as submitted."""

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


@dataclass(frozen=True)
class Change:
    """A notable change someone made to a job, kept so ops can tell who steered it (e.g. a priority)."""

    at: datetime
    by: str
    what: str


@dataclass(frozen=True)
class Job:
    """A queued CreateTrainingJob request and where it stands.

    `submitted_at` never changes, so a preempted job resumes ahead of later jobs of its priority.
    `version` increments on every write; each write is conditional on the version it read.
    Everything that grows with the job's life is bounded (MAX_INLINE_ATTEMPTS, MAX_HISTORY,
    MAX_EARLIER_JOBS), so one job always fits in one DynamoDB item.
    """

    name: str
    job_id: str
    state: JobState
    priority: int
    submitted_at: datetime
    demand: Mapping[str, int]
    owner: str
    version: int = 0
    attempts: tuple[Attempt, ...] = ()
    """The most recent attempts, oldest first, at most MAX_INLINE_ATTEMPTS; the current one is last."""
    reason: str | None = None
    not_before: datetime | None = None
    start_failures: int = 0
    updated_at: datetime | None = None
    request: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    earlier_attempts: int = 0
    """Attempts older than `attempts[0]`, no longer kept in full."""
    earlier_outcomes: Mapping[AttemptOutcome, int] = field(default_factory=dict)
    """How those earlier attempts ended, counted by outcome."""
    history: tuple[Change, ...] = ()
    """Notable changes, oldest first, at most MAX_HISTORY."""
    earlier_job_ids: tuple[str, ...] = ()
    """Ids of earlier (finished) jobs of this name, newest first: each is readable by its id."""
    team: str | None = None
    """The value of the job's team tag when it was submitted (see domain/config/teams.py)."""
    expected_duration_s: int | None = None
    """How long the job expects to train: its `smq:expected-duration` tag, else None."""
    max_runtime_s: int | None = None
    """The request's StoppingCondition.MaxRuntimeInSeconds: an upper bound on one attempt."""
    stop_outcome: AttemptOutcome | None = None
    """The outcome a stop the queue made will close the attempt with: while `stopping` for a
    governance rule (an idle GPU), after which the job ends failed, not cancelled; while
    `preempting` at a training plan's window end (`plan-window-closed`), after which it waits again."""
    family: str | None = None
    """The job's `smq:family` tag at submission, else None (its family then comes from its name:
    see forecast/durations.py)."""
    budget_override: bool = False
    """Tagged `smq:budget-override` = `true` (by an admin): its team's hold budget never holds it."""
    placements: tuple[Placement, ...] = ()
    """A flexible job's preferences in order (domain/placements/placement.py); () for a pinned job. `demand` is
    then where the job is listed while pending (its first preference) and what its attempt's
    placement holds once started."""
    purchase: Purchase = Purchase.ON_DEMAND
    """Its request's purchase options (domain/placements/purchase.py): the pass reads them without the request."""
    warm_key: str | None = None
    """Its request's warm-pool matching digest when it may leave or reuse a warm pool
    (domain/warm_pools.warm_key_of), set at submission: the pass matches jobs to warm pools by it."""

    @property
    def held(self) -> Mapping[str, int]:
        """Instances per pool a live job holds: its current attempt's placement (instance groups:
        `demand`)."""
        attempt = self.current_attempt
        return self.demand if attempt is None else self.held_by(attempt)

    def held_by(self, attempt: Attempt) -> Mapping[str, int]:
        """Instances per pool `attempt` holds while its training job lives, whatever its job does
        since (a fallback, a preemption, a new attempt): its placement's, else (instance groups)
        the job's demand."""
        return self.demand if attempt.placement is None else attempt.placement.demand

    def attempt(self, number: int) -> Attempt | None:
        """Attempt `number`, when it is still kept in full."""
        return next((attempt for attempt in self.attempts if attempt.number == number), None)

    @cached_property
    def where(self) -> Whereabouts:
        """Where the job is listed, waits, runs and what it is priced at (domain/jobs/whereabouts.py)."""
        attempt = self.current_attempt
        selected = None if attempt is None else attempt.placement
        return Whereabouts.of(self.demand, self.placements, selected, pending=self.state is JobState.PENDING)

    @cached_property
    def own_placement(self) -> Placement | None:
        """A pinned job's one placement: its type and count, on its request's purchase option, in
        the type's pool; None for a flexible job or one of instance groups."""
        if self.placements or len(self.demand) != 1 or self.state is not JobState.PENDING:
            return None
        return Placement(self.where.pool, self.where.instances, spot=self.purchase.spot)

    @cached_property
    def current_attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def attempt_count(self) -> int:
        """Every attempt ever started, kept in full or not."""
        return self.earlier_attempts + len(self.attempts)

    @property
    def next_attempt_number(self) -> int:
        return self.attempt_count + 1

    @property
    def attempt_outcomes(self) -> dict[AttemptOutcome, int]:
        """How every ended attempt ended, counted by outcome (open attempts are not counted)."""
        counts = dict(self.earlier_outcomes)
        for attempt in self.attempts:
            if attempt.outcome is not None:
                counts[attempt.outcome] = counts.get(attempt.outcome, 0) + 1
        return counts

    @property
    def is_live(self) -> bool:
        return self.state in LIVE_STATES

    @cached_property
    def is_backfill(self) -> bool:
        attempt = self.current_attempt
        return self.is_live and attempt is not None and attempt.backfill

    @property
    def order(self) -> tuple[int, datetime, str]:
        return scheduling_order(self.priority, self.submitted_at, self.name)


def with_attempt(job: Job, attempt: Attempt) -> Job:
    """`job` with `attempt` as its current one; attempts beyond MAX_INLINE_ATTEMPTS are counted, not kept."""
    attempts = (*job.attempts, attempt)
    dropped, kept = attempts[:-MAX_INLINE_ATTEMPTS], attempts[-MAX_INLINE_ATTEMPTS:]
    outcomes = dict(job.earlier_outcomes)
    for old in dropped:
        outcome = old.outcome or AttemptOutcome.UNKNOWN
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return replace(job, attempts=kept, earlier_attempts=job.earlier_attempts + len(dropped), earlier_outcomes=outcomes)


def with_change(job: Job, change: Change) -> Job:
    """`job` with `change` recorded as its latest; only the MAX_HISTORY most recent are kept."""
    return replace(job, history=(*job.history, change)[-MAX_HISTORY:])


def scheduling_order(priority: int, submitted_at: datetime, name: str) -> tuple[int, datetime, str]:
    """The one ordering of the queue: priority descending, then submission time, then name."""
    return (-priority, submitted_at, name)


ORDER_KEY_PATTERN = re.compile(r"\d{8}#\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z#[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
"""What `order_key` produces; a page token's cursor must look like one before it reaches DynamoDB."""


def order_key(priority: int, submitted_at: datetime, name: str) -> str:
    """`scheduling_order` as a string that DynamoDB sorts the same way (for the index sort keys)."""
    inverted = MAX_PRIORITY - priority
    return f"{inverted:08d}#{submitted_at.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{name}"


def demand_of(request: Mapping[str, Any]) -> dict[str, int]:
    """Instances per instance type a request needs, in the order its groups name them.

    A heterogeneous request (`ResourceConfig.InstanceGroups`) needs instances in every pool it names;
    a flexible one (`InstancePreferences`) is listed under its first preference. The request is
    assumed validated (see the submission rules).
    """
    if placements := placements_of(request):
        return listing_demand(placements)
    resources = request["ResourceConfig"]
    groups = resources.get("InstanceGroups")
    if groups:
        demand: dict[str, int] = {}
        for group in groups:
            demand[group["InstanceType"]] = demand.get(group["InstanceType"], 0) + int(group["InstanceCount"])
        return demand
    return {resources["InstanceType"]: int(resources.get("InstanceCount", 1))}


def new_attempt_nonce() -> str:
    """The random part of a new attempt's name."""
    return secrets.token_hex(ATTEMPT_NONCE_BYTES)


def attempt_name(name: str, nonce: str, number: int) -> str:
    """The SageMaker name of attempt `number`: unique per job and attempt, ≤ 63 chars.

    `nonce` (random per attempt, see `new_attempt_nonce`) keeps the name from being guessed before
    the attempt is opened and from colliding with another attempt or an earlier job of the name; the
    attempt number tells attempts apart for people reading SageMaker's console.
    """
    suffix = f"-{nonce}-{number}"
    stem = name[: TRAINING_JOB_NAME_MAX - len(suffix)].rstrip("-")
    return f"{stem}{suffix}"


def tag_value(request: Mapping[str, Any], key: str) -> str | None:
    for tag in request.get("Tags") or ():
        if isinstance(tag, Mapping) and tag.get("Key") == key:
            value = tag.get("Value")
            return value if isinstance(value, str) else None
    return None


def is_another_stacks(tags: Mapping[str, str], stack: str | None) -> bool:
    """Whether a training job's `smq:stack` tag names an smq stack other than `stack`: that stack
    governs it, and this one only counts the instances it holds. A job without the tag (started
    outside every queue, or by a stack from before the tag) is not; a stack without a name (None)
    tells no stack apart."""
    claimed = tags.get(STACK_TAG)
    return stack is not None and claimed is not None and claimed != stack


def queue_tags(tags: Mapping[str, str]) -> tuple[str, int] | None:
    """The queue job and attempt number a training job's `smq:job` / `smq:attempt` tags name; None
    when they name none. Tags are a claim anyone can make: `is_own_attempt` decides whether to
    believe it."""
    job_name, attempt = tags.get(JOB_TAG, ""), tags.get(ATTEMPT_TAG, "")
    if not TRAINING_JOB_NAME_PATTERN.fullmatch(job_name) or not (attempt.isascii() and attempt.isdigit()):
        return None
    return job_name, int(attempt)
