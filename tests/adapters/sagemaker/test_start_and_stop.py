"""Starting an attempt and stopping it: the exact requests, adopting an attempt that already
started, and the error map (botocore Stubber)."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.sagemaker import START_ERRORS, SageMakerTrainingService
from smq_lambda.domain.jobs.model import Job
from smq_lambda.errors import StartOutcomeUnknown, StartRefused, TrainingServiceError

from tests.adapters.builders import T0, job
from tests.adapters.sagemaker.support import STACK, started, training_job_description

LASTING_CODES = {"ValidationException", "ResourceNotFound", "AccessDeniedException", "AccessDenied"}
TRANSIENT_CODES = {
    "ResourceLimitExceeded",
    "CapacityError",
    "InsufficientCapacityError",
    "ThrottlingException",
    "Throttling",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "ConflictException",
    "InternalFailure",
    "InternalServerError",
    "ServiceUnavailable",
    "ExpiredTokenException",
}


def test_start_sends_the_request_as_submitted_with_the_attempt_name_and_queue_tags(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    spoofed = [
        {"Key": "priority", "Value": "5"},
        {"Key": "smq:job", "Value": "someone-else"},
        {"Key": "team", "Value": "vision"},
        {"Key": "smq:attempt", "Value": "99"},
    ]
    current = started("train", tags=spoofed)
    submitted = copy.deepcopy(dict(current.request))
    expected = {
        **submitted,
        "TrainingJobName": current.attempts[0].training_job_name,
        "Tags": [
            {"Key": "priority", "Value": "5"},
            {"Key": "team", "Value": "vision"},
            {"Key": "smq:job", "Value": "train"},
            {"Key": "smq:attempt", "Value": "1"},
        ],
    }
    stub.add_response("create_training_job", {"TrainingJobArn": "arn:aws:sagemaker:::training-job/x"}, expected)

    service.start_attempt(current)

    assert current.request == submitted


def test_a_stack_with_a_name_tags_its_attempts_with_it_and_drops_a_forged_stack_tag(
    stub: Stubber, stacked: SageMakerTrainingService
) -> None:
    current = started("train", tags=[{"Key": "smq:stack", "Value": "someone-else"}, {"Key": "team", "Value": "ml"}])
    expected = {
        **dict(current.request),
        "TrainingJobName": current.attempts[0].training_job_name,
        "Tags": [
            {"Key": "team", "Value": "ml"},
            {"Key": "smq:job", "Value": "train"},
            {"Key": "smq:attempt", "Value": "1"},
            {"Key": "smq:stack", "Value": STACK},
        ],
    }
    stub.add_response("create_training_job", {"TrainingJobArn": "arn:aws:sagemaker:::training-job/x"}, expected)

    stacked.start_attempt(current)


def test_a_request_without_tags_gets_the_queue_tags(stub: Stubber, service: SageMakerTrainingService) -> None:
    current = started("bare")
    body = dict(current.request)
    del body["Tags"]
    current = replace(current, request=body)
    stub.add_response(
        "create_training_job",
        {"TrainingJobArn": "arn"},
        {
            **body,
            "TrainingJobName": current.attempts[0].training_job_name,
            "Tags": [{"Key": "smq:job", "Value": "bare"}, {"Key": "smq:attempt", "Value": "1"}],
        },
    )

    service.start_attempt(current)


def _tags_of(current: Job, **changed: str | None) -> dict[str, Any]:
    """A ListTags answer: the tags the queue's create of `current`'s attempt sent, some changed
    (None: left out), beside a tag of the user's."""
    attempt = current.attempts[-1]
    tags = {"team": "vision", "smq:job": current.name, "smq:attempt": str(attempt.number), "smq:stack": STACK}
    tags.update({key.replace("_", ":"): value for key, value in changed.items()})
    return {"Tags": [{"Key": key, "Value": value} for key, value in tags.items() if value is not None]}


def _existing(stub: Stubber, current: Job, created: datetime, tags: dict[str, Any]) -> None:
    """CreateTrainingJob answers ResourceInUse; the training job of that name is described and its tags read."""
    name = current.attempts[-1].training_job_name
    stub.add_client_error("create_training_job", "ResourceInUse", "Training job names must be unique")
    description = training_job_description(name, CreationTime=created)
    stub.add_response("describe_training_job", description, {"TrainingJobName": name})
    stub.add_response("list_tags", tags, {"ResourceArn": description["TrainingJobArn"]})


def test_resource_in_use_for_the_attempt_name_means_already_started(
    stub: Stubber, stacked: SageMakerTrainingService
) -> None:
    """The queue's own earlier create, whose answer was lost, was made after the attempt opened and
    carries the attempt's tags: it is adopted."""
    current = started()
    _existing(stub, current, T0, _tags_of(current))

    stacked.start_attempt(current)


def test_an_attempt_name_taken_before_the_attempt_opened_is_refused_not_adopted(
    stub: Stubber, stacked: SageMakerTrainingService
) -> None:
    """Someone who learnt the name created it first: adopting that training job would run their
    request under the queue's name, so the name is refused and the next attempt gets another."""
    current = started()
    _existing(stub, current, T0 - timedelta(hours=1), _tags_of(current))

    with pytest.raises(StartRefused) as refused:
        stacked.start_attempt(current)

    assert (refused.value.lasting, "not by the queue" in refused.value.reason) == (False, True)


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param({"smq_job": None, "smq_attempt": None, "smq_stack": None}, id="no queue tags"),
        pytest.param({"smq_job": "another-job"}, id="another job"),
        pytest.param({"smq_attempt": "2"}, id="another attempt"),
        pytest.param({"smq_stack": "staging"}, id="another stack"),
        pytest.param({"smq_stack": None}, id="no stack"),
    ],
)
def test_a_training_job_of_the_recorded_name_without_the_attempts_tags_is_refused_not_adopted(
    stub: Stubber, stacked: SageMakerTrainingService, changed: dict[str, str | None]
) -> None:
    """After a create whose answer was lost, someone who read the recorded name in `GET /jobs`
    created it later: created after the attempt opened, but not with the attempt's tags."""
    current = started()
    _existing(stub, current, T0 + timedelta(seconds=5), _tags_of(current, **changed))

    with pytest.raises(StartRefused) as refused:
        stacked.start_attempt(current)

    assert (refused.value.lasting, "not by the queue" in refused.value.reason) == (False, True)


def test_a_stack_without_a_name_adopts_only_a_training_job_without_a_stack_tag(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    current = started()
    _existing(stub, current, T0, _tags_of(current, smq_stack="production"))
    with pytest.raises(StartRefused):
        service.start_attempt(current)

    _existing(stub, current, T0, _tags_of(current, smq_stack=None))
    service.start_attempt(current)


def test_an_existing_attempt_name_that_cannot_be_checked_is_an_unknown_outcome(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    current = started()
    stub.add_client_error("create_training_job", "ResourceInUse", "Training job names must be unique")
    stub.add_client_error("describe_training_job", "ThrottlingException", "slow down")

    with pytest.raises(StartOutcomeUnknown):
        service.start_attempt(current)


def test_every_mapped_code_is_tested_here() -> None:
    assert set(START_ERRORS) == LASTING_CODES | TRANSIENT_CODES


@pytest.mark.parametrize(
    ("code", "lasting"),
    [(code, True) for code in sorted(LASTING_CODES)] + [(code, False) for code in sorted(TRANSIENT_CODES)],
)
def test_start_refusals_are_lasting_or_transient_by_error_code(
    stub: Stubber, service: SageMakerTrainingService, code: str, lasting: bool
) -> None:
    stub.add_client_error("create_training_job", code, f"message of {code}")

    with pytest.raises(StartRefused) as refused:
        service.start_attempt(started())

    assert refused.value.lasting is lasting
    assert refused.value.reason == f"{code}: message of {code}"


def test_an_unknown_error_code_is_transient(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_client_error("create_training_job", "SomethingNew", "never seen before")

    with pytest.raises(StartRefused) as refused:
        service.start_attempt(started())

    assert refused.value.lasting is False


def test_a_request_botocore_rejects_is_a_lasting_refusal_and_sends_nothing(unreachable_client: Any) -> None:
    """Sent anywhere, the request would meet a closed port and be refused as transient."""
    current = started()
    body = dict(current.request)
    del body["RoleArn"]

    with pytest.raises(StartRefused) as refused:
        SageMakerTrainingService(unreachable_client).start_attempt(replace(current, request=body))

    assert refused.value.lasting is True
    assert "RoleArn" in refused.value.reason


def test_an_unreachable_sagemaker_is_a_transient_refusal(unreachable_client: Any) -> None:
    with pytest.raises(StartRefused) as refused:
        SageMakerTrainingService(unreachable_client).start_attempt(started())

    assert refused.value.lasting is False
    assert refused.value.reason.startswith("SageMaker could not be reached")


def test_a_job_without_an_attempt_cannot_be_started(service: SageMakerTrainingService) -> None:
    with pytest.raises(ValueError, match="no attempt"):
        service.start_attempt(job("never-started"))


def test_stop_sends_stop_training_job(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_response("stop_training_job", {}, {"TrainingJobName": "train-1"})

    service.stop("train-1")


@pytest.mark.parametrize("code", ["ValidationException", "ResourceNotFound"])
def test_stopping_a_job_that_is_ending_or_gone_is_fine(
    stub: Stubber, service: SageMakerTrainingService, code: str
) -> None:
    stub.add_client_error("stop_training_job", code, "The training job is in status Completed")

    service.stop("train-1")


def test_other_stop_failures_are_raised_typed(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_client_error("stop_training_job", "ThrottlingException", "Rate exceeded")

    with pytest.raises(TrainingServiceError) as failed:
        service.stop("train-1")

    assert failed.value.operation == "StopTrainingJob"
    assert failed.value.code == "ThrottlingException"
