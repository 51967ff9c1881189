"""DescribeTrainingJob read into a report: status, reason, end, and what the governance rules count."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.sagemaker import SageMakerTrainingService
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.errors import TrainingServiceError

from tests.adapters.sagemaker.support import training_job_description


def test_describe_reports_status_reason_and_end(stub: Stubber, service: SageMakerTrainingService) -> None:
    ended = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
    stub.add_response(
        "describe_training_job",
        training_job_description(
            "train-1", "Failed", SecondaryStatus="Failed", FailureReason="AlgorithmError: boom", TrainingEndTime=ended
        ),
        {"TrainingJobName": "train-1"},
    )

    status = service.describe("train-1")

    assert status == TrainingJobStatus(
        name="train-1",
        status="Failed",
        secondary_status="Failed",
        failure_reason="AlgorithmError: boom",
        end_time=ended,
    )


def test_describe_carries_what_the_governance_rules_count(stub: Stubber, service: SageMakerTrainingService) -> None:
    """Spot interruptions and training time come from SecondaryStatusTransitions and
    TrainingTimeInSeconds, so reconciliation decides as the events do."""
    started = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    transitions = [
        {"Status": "Training", "StartTime": started, "EndTime": started, "StatusMessage": "Training in progress."},
        {"Status": "Interrupted", "StartTime": started, "StatusMessage": "spot interruption"},
    ]
    stub.add_response(
        "describe_training_job",
        training_job_description(
            "train-1",
            "InProgress",
            SecondaryStatus="Interrupted",
            SecondaryStatusTransitions=transitions,
            TrainingTimeInSeconds=42,
        ),
        {"TrainingJobName": "train-1"},
    )

    status = service.describe("train-1")

    assert status is not None
    assert status.secondary_status_transitions == tuple(transitions)
    assert status.training_time_seconds == 42
    assert status.description()["SecondaryStatusTransitions"] == transitions


@pytest.mark.parametrize(
    ("code", "message"),
    [("ValidationException", "Requested resource not found."), ("ResourceNotFound", "not found")],
)
def test_describe_of_an_unknown_name_is_none(
    stub: Stubber, service: SageMakerTrainingService, code: str, message: str
) -> None:
    stub.add_client_error("describe_training_job", code, message)

    assert service.describe("nobody") is None


def test_other_describe_failures_are_raised_typed(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_client_error("describe_training_job", "InternalFailure", "oops")

    with pytest.raises(TrainingServiceError) as failed:
        service.describe("train-1")

    assert failed.value.code == "InternalFailure"
