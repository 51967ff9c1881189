"""Reports under the governance policy (`apply_report`): spot fallback, MaxWaitTimeExceeded and
failure retry as pure state changes, and the two lifecycle transitions they use."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import IllegalTransition, JobState
from smq_lambda.domain.placements.purchase import Purchase
from smq_lambda.governance.governed_reports import apply_report
from smq_lambda.governance.policy import Policy, RetryPolicy
from smq_lambda.governance.spot import OnDemandCapacity
from smq_lambda.ports import TrainingJobStatus

NOW = datetime(2024, 1, 1, tzinfo=UTC)
LATER = NOW + timedelta(hours=1)
TRAINING_JOB = "j-01234567-1"
CHECKPOINTS = {"S3Uri": "s3://bucket/checkpoints/j/", "LocalPath": "/opt/ml/checkpoints"}
S = JobState
ROOMY = OnDemandCapacity({"ml.g5.xlarge": 8})
"""On-demand capacity where these jobs may always fall back."""


def request(*, spot: bool) -> dict[str, Any]:
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": 3600}
    if spot:
        stopping["MaxWaitTimeInSeconds"] = 7200
    return {
        "TrainingJobName": "j",
        "RoleArn": "arn:aws:iam::000000000000:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "image", "TrainingInputMode": "File"},
        "HyperParameters": {"epochs": "3"},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
        "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
        "StoppingCondition": stopping,
        "CheckpointConfig": dict(CHECKPOINTS),
        "EnableManagedSpotTraining": spot,
        "Tags": [{"Key": "team", "Value": "ml"}],
    }


def job_in(state: JobState, *, spot: bool = True) -> Job:
    job = Job(name="j", job_id="0123456789abcdef", state=S.PENDING, priority=0, submitted_at=NOW,
              demand={"ml.g5.xlarge": 1}, owner="o", request=request(spot=spot))  # fmt: skip
    job = lifecycle.start(job, NOW, reason="fits", nonce="01234567")
    if state is S.STARTING:
        return job
    job = lifecycle.mark_running(job, NOW)
    if state is S.RUNNING:
        return job
    return lifecycle.request_stop(job, NOW, preempt=state is S.PREEMPTING, reason=f"{state} for test")


def interrupted(times: int, *, status: str = "InProgress") -> TrainingJobStatus:
    """A report after `times` spot interruptions, each followed by a restart into Training."""
    transitions: list[dict[str, Any]] = [{"Status": "Starting"}, {"Status": "Training"}]
    for _ in range(times):
        transitions += [{"Status": "Interrupted"}, {"Status": "Starting"}, {"Status": "Training"}]
    secondary = "Interrupted" if times else "Training"
    return TrainingJobStatus(TRAINING_JOB, status, secondary, secondary_status_transitions=tuple(transitions))


def failed(reason: str | None, *, trained: int = 600) -> TrainingJobStatus:
    return TrainingJobStatus(TRAINING_JOB, "Failed", "Failed", failure_reason=reason, training_time_seconds=trained)


@pytest.mark.parametrize(
    ("limit", "interruptions", "falls_back"),
    [
        (3, 0, False),
        (3, 3, False),
        (3, 4, True),
        (3, 9, True),
        (0, 0, False),
        (0, 1, True),
        (1, 1, False),
        (1, 2, True),
    ],
)
def test_a_spot_attempt_falls_back_only_past_the_limit(limit: int, interruptions: int, falls_back: bool) -> None:
    effect = apply_report(
        job_in(S.RUNNING), 1, interrupted(interruptions), LATER, Policy(spot_interruption_limit=limit), ROOMY
    )

    if not falls_back:
        assert effect is None
        return
    assert effect is not None and effect.stop == TRAINING_JOB
    job = effect.job
    assert job.state is S.PENDING and job.submitted_at == NOW
    attempt = job.attempts[-1]
    assert attempt.outcome == AttemptOutcome.SPOT_FALLBACK and attempt.ended_at == LATER
    assert attempt.reason == job.reason and f"interrupted {interruptions} times (limit {limit})" in (job.reason or "")
    assert job.history[-1].by == "governance" and job.history[-1].what == job.reason


def test_the_on_demand_request_replaces_the_stored_one_and_keeps_every_other_member() -> None:
    spot = job_in(S.STARTING)

    effect = apply_report(spot, 1, interrupted(4), LATER, Policy(), ROOMY)

    assert effect is not None
    on_demand = dict(effect.job.request)
    assert on_demand.pop("EnableManagedSpotTraining") is False
    assert on_demand.pop("StoppingCondition") == {"MaxRuntimeInSeconds": 3600}
    expected = request(spot=True)
    del expected["EnableManagedSpotTraining"], expected["StoppingCondition"]
    assert on_demand == expected and on_demand["CheckpointConfig"] == CHECKPOINTS
    assert spot.request["EnableManagedSpotTraining"] is True, "the job it was derived from is untouched"


@pytest.mark.parametrize("state", [S.PREEMPTING, S.STOPPING])
def test_a_job_already_being_stopped_does_not_fall_back(state: JobState) -> None:
    assert apply_report(job_in(state), 1, interrupted(9), LATER, Policy(), ROOMY) is None


def test_an_on_demand_job_never_falls_back() -> None:
    assert apply_report(job_in(S.RUNNING, spot=False), 1, interrupted(9), LATER, Policy(), ROOMY) is None


def test_a_report_of_another_attempt_changes_nothing() -> None:
    assert apply_report(job_in(S.RUNNING), 2, interrupted(9), LATER, Policy(), ROOMY) is None
    assert apply_report(job_in(S.RUNNING), 2, failed("InternalServerError: x"), LATER, Policy(), ROOMY) is None


@given(limit=st.integers(min_value=0, max_value=20), count=st.integers(min_value=0, max_value=25))
def test_fallback_exactly_when_interruptions_exceed_the_limit(limit: int, count: int) -> None:
    effect = apply_report(job_in(S.RUNNING), 1, interrupted(count), LATER, Policy(spot_interruption_limit=limit), ROOMY)

    assert (effect is not None) == (count > limit)


MAX_WAIT = TrainingJobStatus(TRAINING_JOB, "Stopped", "MaxWaitTimeExceeded")


def test_a_spot_job_sagemaker_stopped_at_its_max_wait_is_queued_again_on_demand() -> None:
    effect = apply_report(job_in(S.RUNNING), 1, MAX_WAIT, LATER, Policy(), ROOMY)

    assert effect is not None and effect.stop is None  # SageMaker stopped it already
    assert effect.job.state is S.PENDING
    assert effect.job.attempts[-1].outcome == AttemptOutcome.SPOT_FALLBACK
    assert effect.job.request["EnableManagedSpotTraining"] is False
    assert "MaxWaitTimeInSeconds" not in effect.job.request["StoppingCondition"]
    assert effect.job.purchase is Purchase.ON_DEMAND
    assert "at its MaxWaitTimeInSeconds (7200 s)" in (effect.job.reason or "")
    assert effect.notice is not None


@pytest.mark.parametrize("repeats", [1, 2, 3])
def test_duplicate_and_late_max_wait_reports_requeue_once(repeats: int) -> None:
    effect = apply_report(job_in(S.RUNNING), 1, MAX_WAIT, LATER, Policy(), ROOMY)
    assert effect is not None
    job = effect.job
    for _ in range(repeats):
        assert apply_report(job, 1, MAX_WAIT, LATER + timedelta(minutes=repeats), Policy(), ROOMY) is None
    assert job.attempt_outcomes == {AttemptOutcome.SPOT_FALLBACK: 1}


def test_a_spot_only_job_sagemaker_stopped_at_its_max_wait_fails_with_that_reason() -> None:
    spot_only = job_in(S.RUNNING)
    spot_only = replace(spot_only, request={**spot_only.request, "Tags": [{"Key": "smq:spot-only", "Value": "true"}]})

    effect = apply_report(spot_only, 1, MAX_WAIT, LATER, Policy(), ROOMY)

    assert effect is not None and effect.stop is None
    assert effect.job.state is S.FAILED
    assert effect.job.attempts[-1].outcome == AttemptOutcome.MAX_WAIT_TIME_EXCEEDED
    assert "MaxWaitTimeInSeconds (7200 s) exceeded" in (effect.job.reason or "")


def test_a_stop_the_queue_asked_for_keeps_its_meaning_at_max_wait() -> None:
    report = TrainingJobStatus(TRAINING_JOB, "Stopped", "MaxWaitTimeExceeded")

    effect = apply_report(job_in(S.PREEMPTING), 1, report, LATER, Policy(), ROOMY)

    assert effect is not None and effect.job.state is S.PENDING
    assert effect.job.attempts[-1].outcome == "preempted"


RETRY = RetryPolicy(max_retries=2, min_training_seconds=60, retryable_reasons=("ThrottlingException",))


@pytest.mark.parametrize(
    ("reason", "trained", "retried", "says"),
    [
        ("InternalServerError: We encountered an internal error. Please try again.", 600, True, "retry 1 of 2"),
        ("CapacityError: Unable to provision requested ML compute capacity.", 600, True, "compute capacity"),
        ("ClientError: ThrottlingException while reading data", 600, True, "retryable_reasons"),
        ("InternalServerError: We encountered an internal error.", 60, True, "retry 1 of 2"),
        ("InternalServerError: We encountered an internal error.", 59, False, "less than retry.min_training_seconds"),
        ("AlgorithmError: ExecuteUserScriptError: ExitCode 1", 600, False, "not retried (user code or request)"),
        ("ClientError: Data download failed", 600, False, "not retried (user code or request)"),
        ("Something nobody has seen before", 600, False, "not retried (unrecognised)"),
        (None, 600, False, "SageMaker gave no failure reason"),
    ],
)
def test_failure_table(reason: str | None, trained: int, retried: bool, says: str) -> None:
    effect = apply_report(job_in(S.RUNNING), 1, failed(reason, trained=trained), LATER, Policy(retry=RETRY), ROOMY)

    assert effect is not None and effect.stop is None
    job = effect.job
    assert job.state is (S.PENDING if retried else S.FAILED)
    assert job.attempts[-1].outcome == (AttemptOutcome.INFRASTRUCTURE_FAILURE if retried else "failed")
    assert says in (job.reason or "") and job.attempts[-1].reason == job.reason
    assert job.submitted_at == NOW


def test_retries_stop_at_the_limit() -> None:
    policy = Policy(retry=RetryPolicy(max_retries=2))
    job = job_in(S.RUNNING)
    for _ in range(2):
        effect = apply_report(job, job.attempts[-1].number, infrastructure_failure_of(job), LATER, policy, ROOMY)
        assert effect is not None and effect.job.state is S.PENDING
        job = lifecycle.mark_running(lifecycle.start(effect.job, LATER, reason="fits"), LATER)

    final = apply_report(job, 3, infrastructure_failure_of(job), LATER, policy, ROOMY)

    assert final is not None and final.job.state is S.FAILED
    assert "had its 2 retries (retry.max_retries)" in (final.job.reason or "")
    assert final.job.attempt_outcomes == {AttemptOutcome.INFRASTRUCTURE_FAILURE: 2, "failed": 1}


def infrastructure_failure_of(job: Job) -> TrainingJobStatus:
    return TrainingJobStatus(job.attempts[-1].training_job_name, "Failed", "Failed",
                             failure_reason="InternalServerError: x", training_time_seconds=600)  # fmt: skip


def test_a_failure_while_a_stop_is_under_way_ends_the_job_as_before() -> None:
    effect = apply_report(job_in(S.PREEMPTING), 1, failed("InternalServerError: x"), LATER, Policy(), ROOMY)

    assert effect is not None and effect.job.state is S.FAILED


@pytest.mark.parametrize("transition", [lifecycle.retry_failed, lifecycle.fall_back_to_on_demand])
def test_only_a_live_job_can_be_requeued_by_governance(transition: Any) -> None:
    pending = Job(name="j", job_id="0123456789abcdef", state=S.PENDING, priority=0, submitted_at=NOW,
                  demand={"ml.g5.xlarge": 1}, owner="o")  # fmt: skip
    extra = {"request": {}} if transition is lifecycle.fall_back_to_on_demand else {}

    with pytest.raises(IllegalTransition):
        transition(pending, LATER, reason="r", **extra)
