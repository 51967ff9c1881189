"""Failure retry: whose fault a failed attempt was, and whether the job gets another attempt.

SageMaker says why a training job failed only in `FailureReason`, a sentence that starts with an
error class (`InternalServerError: We encountered an internal error. Please try again.`,
`CapacityError: Unable to provision requested ML compute capacity. ...`, `AlgorithmError: ...`,
`ClientError: ...`). FAILURE_TABLE reads that sentence: the first row whose pattern it contains
decides. Infrastructure failures (SageMaker's internal errors, missing capacity, broken hardware)
are retried: the same request can succeed on other instances. Failures of the training code or of
the request (`AlgorithmError`, `ClientError`, running out of memory) are final: the same code and
request would fail the same way. A reason no row recognises is final too: retrying the unknown
spends money on a guess. The policy's `retry.retryable_reasons` patterns are checked first, so a
deployment can retry what it knows to be transient.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.governance.actions import FailJob, RetryAttempt
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.untyped_fields import is_int, member, moment, reported_running_attempt

FAILED = "Failed"
TRAINING = "Training"


class Cause(StrEnum):
    INFRASTRUCTURE = "infrastructure"
    USER = "user code or request"
    UNRECOGNISED = "unrecognised"


@dataclass(frozen=True)
class FailureRule:
    pattern: str
    """A regular expression searched (case-insensitive) in FailureReason."""
    cause: Cause
    explanation: str


FAILURE_TABLE: tuple[FailureRule, ...] = (
    # Hardware errors reach FailureReason through the training code's own error, so they come
    # before the AlgorithmError row that would otherwise claim them.
    FailureRule(r"uncorrectable ECC error", Cause.INFRASTRUCTURE, "a GPU memory (ECC) hardware error"),
    FailureRule(r"hardware failure", Cause.INFRASTRUCTURE, "an instance hardware failure SageMaker could not repair"),
    FailureRule(
        r"^\s*InternalServerError\b",
        Cause.INFRASTRUCTURE,
        "an internal SageMaker error (the only failure SageMaker's own RetryStrategy retries)",
    ),
    FailureRule(r"^\s*CapacityError\b", Cause.INFRASTRUCTURE, "SageMaker could not provision the ML compute capacity"),
    FailureRule(r"insufficient ?capacity", Cause.INFRASTRUCTURE, "EC2 had no capacity of the instance type"),
    FailureRule(
        r"out of memory|OutOfMemory|more memory",
        Cause.USER,
        "the training ran out of memory: it needs a larger instance type or smaller batches",
    ),
    FailureRule(r"^\s*AlgorithmError\b", Cause.USER, "the training code failed; the same code would fail again"),
    FailureRule(
        r"^\s*ClientError\b",
        Cause.USER,
        "the request or its inputs are wrong (data, image, permissions or configuration)",
    ),
)


@dataclass(frozen=True)
class Classification:
    cause: Cause
    explanation: str


def classify(failure_reason: str | None, policy: Policy) -> Classification:
    """Whose fault the failure SageMaker reported was: the policy's patterns first, then the table."""
    if not failure_reason:
        return Classification(Cause.UNRECOGNISED, "SageMaker gave no failure reason")
    for pattern in policy.retry.retryable_reasons:
        if re.search(pattern, failure_reason, re.IGNORECASE):
            return Classification(Cause.INFRASTRUCTURE, f"it matches retry.retryable_reasons pattern {pattern!r}")
    for rule in FAILURE_TABLE:
        if re.search(rule.pattern, failure_reason, re.IGNORECASE):
            return Classification(rule.cause, rule.explanation)
    return Classification(
        Cause.UNRECOGNISED,
        "SageMaker's reason is not one the queue knows as the infrastructure's (see docs/scheduling.md, Failure retry)",
    )


def trained_seconds(description: Mapping[str, Any]) -> int:
    """How long the attempt trained: SageMaker's TrainingTimeInSeconds when it reports one, else the
    time spent in the `Training` secondary status (state-change events carry no TrainingTimeInSeconds)."""
    reported = description.get("TrainingTimeInSeconds")
    if is_int(reported) and reported >= 0:
        return reported
    transitions = description.get("SecondaryStatusTransitions")
    total = 0.0
    for transition in transitions if isinstance(transitions, list) else ():
        start, end = moment(member(transition, "StartTime")), moment(member(transition, "EndTime"))
        if member(transition, "Status") == TRAINING and start is not None and end is not None:
            total += max((end - start).total_seconds(), 0.0)
    return int(total)


def decide_failure(job: Job, description: Mapping[str, Any], policy: Policy) -> RetryAttempt | FailJob | None:
    """What a failed attempt means for a running job: another attempt, or the end. None when the
    report is not the failure of the job's running attempt (a job being stopped ends as it does)."""
    attempt = reported_running_attempt(job, description, FAILED)
    if attempt is None:
        return None
    reason = description.get("FailureReason")
    reason = reason if isinstance(reason, str) and reason else None
    failure = reason or "training job failed"
    verdict = classify(reason, policy)
    if verdict.cause is not Cause.INFRASTRUCTURE:
        final = f"{failure}; not retried ({verdict.cause}): {verdict.explanation}"
        return FailJob(job.name, attempt.number, AttemptOutcome.FAILED, final)
    trained, retry = trained_seconds(description), policy.retry
    retries = job.attempt_outcomes.get(AttemptOutcome.INFRASTRUCTURE_FAILURE, 0)
    if trained < retry.min_training_seconds:
        why = f"it trained {trained} s, less than retry.min_training_seconds ({retry.min_training_seconds} s)"
    elif retries >= retry.max_retries:
        why = f"the job has had its {retry.max_retries} retries (retry.max_retries)"
    else:
        return RetryAttempt(
            job.name,
            attempt.number,
            f"{failure}; retrying as attempt {job.next_attempt_number} (retry {retries + 1} of {retry.max_retries}): "
            f"{verdict.explanation}",
        )
    return FailJob(
        job.name, attempt.number, AttemptOutcome.FAILED, f"{failure}; not retried: {verdict.explanation}, but {why}"
    )
