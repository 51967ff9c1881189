"""Failure retry: SageMaker's failure reasons classified (real texts), training time measured, and
the retry-or-final decision with its reasons."""

from __future__ import annotations

import re
from typing import Any

import pytest
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.governance.actions import FailJob, RetryAttempt
from smq_lambda.governance.policy import Policy, RetryPolicy
from smq_lambda.governance.retry import FAILURE_TABLE, Cause, classify, decide_failure, trained_seconds

from .builders import NOW, attempt_name, description, job, transitions

INTERNAL = "InternalServerError: We encountered an internal error. Please try again."
CAPACITY = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)
USER_SCRIPT = ('AlgorithmError: ExecuteUserScriptError:\nCommand "/opt/conda/bin/python3.6 /run_pytorch_training.py '
               '--batch_size 768 --epochs 100"')  # fmt: skip

REASONS: list[tuple[str | None, Cause]] = [
    (INTERNAL, Cause.INFRASTRUCTURE),
    ("InternalServerError: We encountered an internal error - Platform Error: SageMaker pipe channel timed out",
     Cause.INFRASTRUCTURE),
    (CAPACITY, Cause.INFRASTRUCTURE),
    (("EC2InsufficientCapacityError: Instance type 'ml.g5.48xlarge' is temporarily unavailable in supported "
      "availability zones [euw1-az1]. Try again in a few minutes, or try a different instance type."),
     Cause.INFRASTRUCTURE),
    ("AlgorithmError: RuntimeError: CUDA error: uncorrectable ECC error encountered", Cause.INFRASTRUCTURE),
    ("ClientError: Training cluster repair failed after a hardware failure", Cause.INFRASTRUCTURE),
    (USER_SCRIPT, Cause.USER),
    ("AlgorithmError: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", Cause.USER),
    (("ClientError: Please use an instance type with more memory, or reduce the size of training data processed on "
      "an instance."), Cause.USER),
    ("ClientError: Data download failed:NoSuchKey (404): The specified key does not exist.", Cause.USER),
    ("ClientError: Artifact upload failed:Insufficient disk space", Cause.USER),
    ("ResourceLimitExceeded: The account-level service limit 'ml.p3.2xlarge for training job usage' is 0 Instances",
     Cause.UNRECOGNISED),
    ("Something SageMaker has never said", Cause.UNRECOGNISED),
    ("", Cause.UNRECOGNISED),
    (None, Cause.UNRECOGNISED),
]  # fmt: skip


@pytest.mark.parametrize(("reason", "cause"), REASONS)
def test_failure_reasons_are_classified(reason: str | None, cause: Cause) -> None:
    assert classify(reason, Policy()).cause is cause


def test_the_policy_s_patterns_come_first() -> None:
    policy = Policy(retry=RetryPolicy(retryable_reasons=("NCCL watchdog.*timed out",)))
    reason = "AlgorithmError: NCCL watchdog thread terminated: Watchdog caught collective operation timed out"

    verdict = classify(reason, policy)

    assert verdict.cause is Cause.INFRASTRUCTURE
    assert "retry.retryable_reasons" in verdict.explanation
    assert classify(reason, Policy()).cause is Cause.USER


def test_every_table_pattern_compiles_and_explains_itself() -> None:
    for rule in FAILURE_TABLE:
        re.compile(rule.pattern)
        assert rule.explanation


MINUTE = 60_000
"""Epoch milliseconds, as state-change events carry times."""
T = int(NOW.timestamp() * 1000)


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ({"TrainingTimeInSeconds": 3600}, 3600),
        ({"TrainingTimeInSeconds": 3600, "SecondaryStatusTransitions": transitions("Training", "Failed")}, 3600),
        ({"SecondaryStatusTransitions": transitions("Starting", "Training", "Interrupted", "Training", "Failed")},
         1200),
        ({"SecondaryStatusTransitions": [{"Status": "Training", "StartTime": T, "EndTime": T + 5 * MINUTE},
                                         {"Status": "Training", "StartTime": str(T), "EndTime": str(T + MINUTE)}]},
         360),
        ({"SecondaryStatusTransitions": transitions("Starting", "Training")}, 0),
        ({"TrainingTimeInSeconds": True, "SecondaryStatusTransitions": "junk"}, 0),
        ({"SecondaryStatusTransitions": [{"Status": "Training", "StartTime": "soon", "EndTime": None}, 7]}, 0),
        ({}, 0),
    ],
)  # fmt: skip
def test_training_time_is_measured(members: dict[str, Any], expected: int) -> None:
    assert trained_seconds(members) == expected


def failed(queued: Any, reason: str | None, *, trained: int | None = 0, **members: Any) -> dict[str, Any]:
    report = description(attempt_name(queued), "Failed", "Failed", **members)
    if reason is not None:
        report["FailureReason"] = reason
    if trained is not None:
        report["TrainingTimeInSeconds"] = trained
    return report


RUNNING = job(JobState.RUNNING)


def test_an_infrastructure_failure_is_retried_as_the_next_attempt() -> None:
    verdict = decide_failure(RUNNING, failed(RUNNING, INTERNAL), Policy())

    assert verdict == RetryAttempt(
        "vit", 1,
        f"{INTERNAL}; retrying as attempt 2 (retry 1 of 2): an internal SageMaker error (the only failure "
        f"SageMaker's own RetryStrategy retries)",
    )  # fmt: skip


def test_a_user_code_failure_is_final() -> None:
    verdict = decide_failure(RUNNING, failed(RUNNING, USER_SCRIPT), Policy())

    assert verdict == FailJob(
        "vit", 1, AttemptOutcome.FAILED,
        f"{USER_SCRIPT}; not retried (user code or request): the training code failed; the same code would fail again",
    )  # fmt: skip


RETRIED_TWICE = job(
    JobState.RUNNING,
    past_outcomes=[AttemptOutcome.INFRASTRUCTURE_FAILURE, "preempted", AttemptOutcome.INFRASTRUCTURE_FAILURE],
)
RETRIED_ONCE = job(JobState.RUNNING, past_outcomes=[AttemptOutcome.INFRASTRUCTURE_FAILURE, "preempted"])
TRAINED_TEN_MINUTES = transitions("Starting", "Training", "Failed")


@pytest.mark.parametrize(
    ("queued", "reason", "trained", "policy", "expected"),
    [
        (RUNNING, CAPACITY, 0, Policy(), "retrying as attempt 2 (retry 1 of 2)"),
        (RETRIED_ONCE, INTERNAL, 0, Policy(), "retrying as attempt 4 (retry 2 of 2)"),
        (RETRIED_TWICE, INTERNAL, 0, Policy(),
         ("not retried: an internal SageMaker error (the only failure SageMaker's own RetryStrategy retries), "
          "but the job has had its 2 retries (retry.max_retries)")),
        (RUNNING, INTERNAL, 0, Policy(retry=RetryPolicy(max_retries=0)), "but the job has had its 0 retries"),
        (RUNNING, INTERNAL, 3599, Policy(retry=RetryPolicy(min_training_seconds=3600)),
         "but it trained 3599 s, less than retry.min_training_seconds (3600 s)"),
        (RUNNING, INTERNAL, 3600, Policy(retry=RetryPolicy(min_training_seconds=3600)), "retrying as attempt 2"),
        (RUNNING, INTERNAL, None, Policy(retry=RetryPolicy(min_training_seconds=600)), "retrying as attempt 2"),
        (RUNNING, INTERNAL, None, Policy(retry=RetryPolicy(min_training_seconds=601)), "but it trained 600 s"),
        (RUNNING, None, 0, Policy(),
         "training job failed; not retried (unrecognised): SageMaker gave no failure reason"),
    ],
    ids=["capacity before training", "second retry", "retries used up", "no retries", "too short", "just long enough",
         "trained per the history", "history too short", "no reason"],
)  # fmt: skip
def test_retry_table(queued: Any, reason: str | None, trained: int | None, policy: Policy, expected: str) -> None:
    verdict = decide_failure(queued, failed(queued, reason, trained=trained,
                                            SecondaryStatusTransitions=TRAINED_TEN_MINUTES), policy)  # fmt: skip

    assert verdict is not None and expected in verdict.reason
    assert isinstance(verdict, RetryAttempt) is ("retrying" in expected)
    assert verdict.attempt == queued.current_attempt.number
    if isinstance(verdict, FailJob):
        assert verdict.outcome == AttemptOutcome.FAILED


@pytest.mark.parametrize(
    ("queued", "report"),
    [
        (RUNNING, description(attempt_name(RUNNING), "InProgress", "Training")),
        (RUNNING, description(attempt_name(RUNNING), "Stopped", "Stopped")),
        (RUNNING, description("someone-else", "Failed", "Failed", FailureReason=INTERNAL)),
        (job(JobState.STOPPING), description(attempt_name(RUNNING), "Failed", "Failed", FailureReason=INTERNAL)),
        (job(JobState.PREEMPTING), description(attempt_name(RUNNING), "Failed", "Failed", FailureReason=INTERNAL)),
        (job(JobState.FAILED), description(attempt_name(RUNNING), "Failed", "Failed", FailureReason=INTERNAL)),
    ],
    ids=["running", "stopped", "another training job", "stopping", "preempting", "already failed"],
)
def test_only_the_failure_of_a_running_attempt_is_decided(queued: Any, report: dict[str, Any]) -> None:
    assert decide_failure(queued, report, Policy()) is None


def test_the_retry_count_survives_attempts_folded_out_of_the_job() -> None:
    many = job(
        JobState.RUNNING,
        past_outcomes=[AttemptOutcome.INFRASTRUCTURE_FAILURE, AttemptOutcome.INFRASTRUCTURE_FAILURE]
        + ["preempted"] * 25,
    )

    assert len(many.attempts) < many.attempt_count
    verdict = decide_failure(many, failed(many, INTERNAL), Policy())

    assert isinstance(verdict, FailJob) and "had its 2 retries" in verdict.reason
