"""Injected faults carry what real SageMaker reports, so the queue's governance rules read them as
they would on AWS: interruptions as `Interrupted` secondary statuses in the events' and
DescribeTrainingJob's SecondaryStatusTransitions, failures with the FailureReason asked for."""

from __future__ import annotations

import pytest
from smq.local.sagemaker import FaultRejected, ValidationError, request_fault
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.retry import Cause, classify
from smq_lambda.governance.spot import interruptions

from tests.local_sagemaker.conftest import Stack, synthetic_job, unique

USER_CODE = "AlgorithmError: loss is NaN (injected)"


def test_each_interruption_is_in_the_events_and_the_description(synthetic: Stack) -> None:
    name = unique("spot-twice")
    synthetic.client.create_training_job(**synthetic_job(name, duration=30, EnableManagedSpotTraining=True))
    for _ in range(2):
        synthetic.wait_secondary(name, "Training")
        synthetic.service.inject(name, "interrupt")
    synthetic.wait_secondary(name, "Training")

    description = synthetic.client.describe_training_job(TrainingJobName=name)
    interrupted_events = [
        event["detail"] for event in list(synthetic.events)
        if event["detail"]["TrainingJobName"] == name and event["detail"]["SecondaryStatus"] == "Interrupted"
    ]  # fmt: skip

    assert interruptions(description) == 2
    assert [interruptions(detail) for detail in interrupted_events] == [1, 2]
    assert all(detail["TrainingJobStatus"] == "InProgress" for detail in interrupted_events)


@pytest.mark.parametrize(
    ("reason", "expected", "cause"),
    [
        (None, "InternalServerError: We encountered an internal error.", Cause.INFRASTRUCTURE),
        (USER_CODE, USER_CODE, Cause.USER),
    ],
)
def test_an_injected_failure_reports_the_reason_asked_for(
    synthetic: Stack, reason: str | None, expected: str, cause: Cause
) -> None:
    name = unique("inject-reason")
    synthetic.client.create_training_job(**synthetic_job(name, duration=30))
    synthetic.wait_secondary(name, "Training")

    request_fault(synthetic.service.url, name, "fail", reason)
    description = synthetic.wait(name)

    assert description["TrainingJobStatus"] == "Failed"
    assert description["FailureReason"].startswith(expected)
    assert classify(description["FailureReason"], Policy()).cause is cause


@pytest.mark.parametrize(("fault", "reason"), [("hang", USER_CODE), ("fail", " "), ("fail", "x" * 1025)])
def test_a_reason_only_goes_with_a_failure_and_fits_failure_reason(synthetic: Stack, fault: str, reason: str) -> None:
    name = unique("inject-bad")
    synthetic.client.create_training_job(**synthetic_job(name, duration=30))

    with pytest.raises(ValidationError):
        synthetic.service.inject(name, fault, reason)
    with pytest.raises(FaultRejected, match="reason"):
        request_fault(synthetic.service.url, name, fault, reason)
