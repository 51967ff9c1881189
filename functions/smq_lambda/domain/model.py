"""Jobs and attempts as the scheduler sees them, and the facts derived from a CreateTrainingJob request."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from smq_lambda.domain.states import LIVE_STATES, JobState

PRIORITY_TAG = "priority"
MIN_PRIORITY = -1_000_000
MAX_PRIORITY = 1_000_000
JOB_TAG = "smq:job"
ATTEMPT_TAG = "smq:attempt"
TRAINING_JOB_NAME_MAX = 63
TRAINING_JOB_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


@dataclass(frozen=True)
class Attempt:
    """One SageMaker training job started for a queued job."""

    number: int
    training_job_name: str
    started_at: datetime
    ended_at: datetime | None = None
    outcome: str | None = None
    reason: str | None = None
    backfill: bool = False
    """Started on instances a waiting job ahead of it could not use yet; reclaimed first."""

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


@dataclass(frozen=True)
class Job:
    """A queued CreateTrainingJob request and where it stands.

    `submitted_at` never changes, so a preempted job resumes ahead of later jobs of its priority.
    `version` increments on every write; each write is conditional on the version it read.
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
    reason: str | None = None
    not_before: datetime | None = None
    start_failures: int = 0
    updated_at: datetime | None = None
    request: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def pool(self) -> str:
        """The instance type of the first instance group: the pool the job is listed under."""
        return next(iter(self.demand))

    @property
    def instances(self) -> int:
        return self.demand[self.pool]

    @property
    def current_attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def next_attempt_number(self) -> int:
        return len(self.attempts) + 1

    @property
    def is_live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def is_backfill(self) -> bool:
        attempt = self.current_attempt
        return self.is_live and attempt is not None and attempt.backfill

    @property
    def order(self) -> tuple[int, datetime, str]:
        return scheduling_order(self.priority, self.submitted_at, self.name)


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

    A heterogeneous request (`ResourceConfig.InstanceGroups`) needs instances in every pool it names.
    The request is assumed validated (see the submission rules).
    """
    resources = request["ResourceConfig"]
    groups = resources.get("InstanceGroups")
    if groups:
        demand: dict[str, int] = {}
        for group in groups:
            demand[group["InstanceType"]] = demand.get(group["InstanceType"], 0) + int(group["InstanceCount"])
        return demand
    return {resources["InstanceType"]: int(resources.get("InstanceCount", 1))}


def attempt_name(name: str, job_id: str, number: int) -> str:
    """The SageMaker name of attempt `number`: deterministic, unique per job and attempt, ≤ 63 chars.

    The job id (random per submission) keeps a resubmitted name from colliding with the training jobs
    of an earlier job of that name; the attempt number keeps attempts apart.
    """
    suffix = f"-{job_id[:8]}-{number}"
    stem = name[: TRAINING_JOB_NAME_MAX - len(suffix)].rstrip("-")
    return f"{stem}{suffix}"


def tag_value(request: Mapping[str, Any], key: str) -> str | None:
    for tag in request.get("Tags") or ():
        if isinstance(tag, Mapping) and tag.get("Key") == key:
            value = tag.get("Value")
            return value if isinstance(value, str) else None
    return None
