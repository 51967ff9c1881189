"""The SageMaker adapter: exact requests and the error map (botocore Stubber), and the calls moto
implements (create, describe, list with pagination)."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st
from moto.core import DEFAULT_ACCOUNT_ID
from moto.sagemaker.models import sagemaker_backends
from smq_lambda.adapters.sagemaker import START_ERRORS, SageMakerTrainingService
from smq_lambda.domain import lifecycle
from smq_lambda.domain.held_instances import held_instances
from smq_lambda.domain.model import Job
from smq_lambda.domain.training_report import TrainingJobStatus
from smq_lambda.errors import StartOutcomeUnknown, StartRefused, TrainingServiceError

from tests.adapters.builders import G5, P5, T0, job, request
from tests.support.aws import REGION

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


def started(name: str = "train", **kwargs: Any) -> Job:
    """A job whose first attempt the scheduler has just opened."""
    return lifecycle.start(job(name, **kwargs), T0, reason="fits")


@pytest.fixture(scope="module")
def offline_client() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


@pytest.fixture
def stub(offline_client: Any) -> Iterator[Stubber]:
    with Stubber(offline_client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture(scope="module")
def unreachable_client() -> Any:
    """A client whose endpoint is a closed local port, tried once."""
    return boto3.client(
        "sagemaker",
        region_name=REGION,
        endpoint_url="http://127.0.0.1:9",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=2),
    )


@pytest.fixture
def service(offline_client: Any) -> SageMakerTrainingService:
    return SageMakerTrainingService(offline_client, page_size=2)


STACK = "production"


@pytest.fixture
def stacked(offline_client: Any) -> SageMakerTrainingService:
    """The adapter of a stack named STACK."""
    return SageMakerTrainingService(offline_client, stack=STACK)


# ------------------------------------------------------------------------ start


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
    description = _description(name, CreationTime=created)
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


# ------------------------------------------------------------------------ stop


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


# ------------------------------------------------------------------------ describe


NO_RESOURCE_CONFIG: Any = object()
"""`_description(..., ResourceConfig=NO_RESOURCE_CONFIG)`: an answer without ResourceConfig."""


def _description(name: str, status: str = "InProgress", **extra: Any) -> dict[str, Any]:
    resources = extra.pop("ResourceConfig", {"InstanceType": G5, "InstanceCount": 1, "VolumeSizeInGB": 30})
    description = {
        "TrainingJobName": name,
        "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{DEFAULT_ACCOUNT_ID}:training-job/{name}",
        "TrainingJobStatus": status,
        "SecondaryStatus": extra.pop("SecondaryStatus", "Training"),
        "AlgorithmSpecification": {"TrainingInputMode": "File"},
        "ResourceConfig": resources,
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "CreationTime": T0,
        "ModelArtifacts": {"S3ModelArtifacts": "s3://bucket/model.tar.gz"},
        **extra,
    }
    if resources is NO_RESOURCE_CONFIG:
        del description["ResourceConfig"]
    return description


def test_describe_reports_status_reason_and_end(stub: Stubber, service: SageMakerTrainingService) -> None:
    ended = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
    stub.add_response(
        "describe_training_job",
        _description(
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
        _description(
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


# ------------------------------------------------------------------------ training jobs outside the queue


def _listing(*names: str, token: str | None = None) -> dict[str, Any]:
    page: dict[str, Any] = {
        "TrainingJobSummaries": [
            {
                "TrainingJobName": name,
                "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{DEFAULT_ACCOUNT_ID}:training-job/{name}",
                "CreationTime": T0,
                "TrainingJobStatus": "InProgress",
            }
            for name in names
        ]
    }
    if token is not None:
        page["NextToken"] = token
    return page


def test_outside_in_progress_pages_through_busy_jobs_and_lists_every_other_jobs_instances(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    stub.add_response(
        "list_training_jobs", _listing("ours-1", "ext-a", token="t1"), {"StatusEquals": "InProgress", "MaxResults": 2}
    )
    stub.add_response(
        "list_training_jobs", _listing("ext-b"), {"StatusEquals": "InProgress", "MaxResults": 2, "NextToken": "t1"}
    )
    stub.add_response("list_training_jobs", _listing("ext-c", "ours-2"), {"StatusEquals": "Stopping", "MaxResults": 2})
    groups = {
        "InstanceGroups": [
            {"InstanceType": P5, "InstanceCount": 2, "InstanceGroupName": "a"},
            {"InstanceType": G5, "InstanceCount": 1, "InstanceGroupName": "b"},
        ],
        "VolumeSizeInGB": 30,
    }
    unpooled = {"InstanceType": "ml.c5.xlarge", "InstanceCount": 4, "VolumeSizeInGB": 30}
    for name, resources in [
        ("ext-a", {"InstanceType": G5, "InstanceCount": 3, "VolumeSizeInGB": 30}),
        ("ext-b", groups),
        ("ext-c", unpooled),
    ]:
        stub.add_response(
            "describe_training_job", _description(name, ResourceConfig=resources), {"TrainingJobName": name}
        )

    outside = service.outside_in_progress(["ours-1", "ours-2"])

    assert outside == {"ext-a": {G5: 3}, "ext-b": {P5: 2, G5: 1}, "ext-c": {"ml.c5.xlarge": 4}}


def test_outside_in_progress_describes_a_job_once(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_response("list_training_jobs", _listing("ext-a"), {"StatusEquals": "InProgress", "MaxResults": 2})
    stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})
    stub.add_response("describe_training_job", _description("ext-a"), {"TrainingJobName": "ext-a"})
    stub.add_response("list_training_jobs", _listing("ext-a"), {"StatusEquals": "InProgress", "MaxResults": 2})
    stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})

    first = service.outside_in_progress([])
    second = service.outside_in_progress([])

    assert first == second == {"ext-a": {G5: 1}}


def test_recent_jobs_are_listed_since_the_time_given_and_come_with_their_tags(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    since = T0 - timedelta(minutes=15)
    listed = {"StatusEquals": "InProgress", "CreationTimeAfter": since, "MaxResults": 2}
    stub.add_response("list_training_jobs", _listing("by-hand", "gone", token="t1"), listed)
    stub.add_response("list_training_jobs", _listing("scripted"), {**listed, "NextToken": "t1"})
    by_hand, scripted = _description("by-hand"), _description("scripted")
    stub.add_response("describe_training_job", by_hand, {"TrainingJobName": "by-hand"})
    stub.add_response(
        "list_tags",
        {"Tags": [{"Key": "project", "Value": "vision"}], "NextToken": "p2"},
        {"ResourceArn": by_hand["TrainingJobArn"]},
    )
    stub.add_response(
        "list_tags",
        {"Tags": [{"Key": "team", "Value": "nlp"}]},
        {"ResourceArn": by_hand["TrainingJobArn"], "NextToken": "p2"},
    )
    stub.add_client_error("describe_training_job", "ValidationException", "Requested resource not found.")
    stub.add_response("describe_training_job", scripted, {"TrainingJobName": "scripted"})
    stub.add_response("list_tags", {"Tags": []}, {"ResourceArn": scripted["TrainingJobArn"]})

    jobs = service.in_progress_since(since)

    assert jobs == [{**by_hand, "Tags": {"project": "vision", "team": "nlp"}}, {**scripted, "Tags": {}}]


@pytest.mark.parametrize("operation", ["list_training_jobs", "list_tags"])
def test_a_failed_recent_listing_is_raised_typed(
    operation: str, stub: Stubber, service: SageMakerTrainingService
) -> None:
    if operation == "list_tags":
        stub.add_response("list_training_jobs", _listing("by-hand"))
        stub.add_response("describe_training_job", _description("by-hand"))
    stub.add_client_error(operation, "ThrottlingException", "Rate exceeded")

    with pytest.raises(TrainingServiceError) as failed:
        service.in_progress_since(T0)

    assert failed.value.operation == {"list_training_jobs": "ListTrainingJobs", "list_tags": "ListTags"}[operation]


def test_a_job_that_ended_between_list_and_describe_counts_nothing(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    stub.add_response("list_training_jobs", _listing("gone"), {"StatusEquals": "InProgress", "MaxResults": 2})
    stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})
    stub.add_client_error("describe_training_job", "ValidationException", "Requested resource not found.")

    assert service.outside_in_progress([]) == {}


SERVERLESS = {
    "BaseModelArn": "arn:aws:sagemaker:us-east-1:aws:hub-content/SageMakerPublicHub/Model/llama/1.0.0",
    "JobType": "FineTuning",
}
PREFERENCES = [{"InstanceType": P5, "InstanceCount": 1}, {"InstanceType": G5, "InstanceCount": 4}]


@pytest.mark.parametrize(
    ("resources", "extra", "held", "unreadable"),
    [
        pytest.param(
            {"InstanceType": G5, "InstanceCount": 3, "VolumeSizeInGB": 30}, {}, {G5: 3}, False, id="type-count"
        ),
        pytest.param({"InstanceType": G5, "VolumeSizeInGB": 30}, {}, {G5: 1}, False, id="type-without-count"),
        pytest.param(
            {
                "InstanceGroups": [
                    {"InstanceType": P5, "InstanceCount": 2, "InstanceGroupName": "a"},
                    {"InstanceType": G5, "InstanceCount": 1, "InstanceGroupName": "b"},
                    {"InstanceType": G5, "InstanceCount": 2, "InstanceGroupName": "c"},
                ],
                "VolumeSizeInGB": 30,
            },
            {},
            {P5: 2, G5: 3},
            False,
            id="instance-groups",
        ),
        pytest.param(
            {
                "InstanceType": P5,
                "InstanceCount": 2,
                "InstancePlacementConfig": {
                    "EnableMultipleJobs": True,
                    "PlacementSpecifications": [{"UltraServerId": "us-1", "InstanceCount": 2}],
                },
            },
            {},
            {P5: 2},
            False,
            id="ultraserver-placement",
        ),
        pytest.param(
            {"InstancePreferences": PREFERENCES, "SelectedInstanceType": G5, "SelectedInstanceCount": 4},
            {},
            {G5: 4},
            False,
            id="preferences-selected",
        ),
        pytest.param(
            {"InstancePreferences": PREFERENCES, "SelectedInstanceType": G5},
            {},
            {G5: 4},
            False,
            id="preferences-selected-count-per-preference",
        ),
        pytest.param(
            {
                "InstancePreferences": [{"InstanceType": P5}, {"InstanceType": G5}],
                "InstanceCount": 2,
                "SelectedInstanceType": P5,
            },
            {},
            {P5: 2},
            False,
            id="preferences-selected-one-count",
        ),
        pytest.param(
            {"InstancePreferences": [{"InstanceType": P5}, {"InstanceType": G5}], "SelectedInstanceType": P5},
            {},
            {},
            True,
            id="preferences-selected-no-count",
        ),
        pytest.param({"InstancePreferences": PREFERENCES}, {}, {}, False, id="preferences-not-selected-yet"),
        pytest.param({"VolumeSizeInGB": 30}, {}, {}, True, id="no-instance-type"),
        pytest.param({}, {}, {}, True, id="empty-resource-config"),
        pytest.param(NO_RESOURCE_CONFIG, {"ServerlessJobConfig": SERVERLESS}, {}, True, id="serverless"),
    ],
)
def test_jobs_outside_the_queue_of_every_documented_shape_count_what_is_readable(
    stub: Stubber,
    service: SageMakerTrainingService,
    caplog: pytest.LogCaptureFixture,
    resources: Any,
    extra: dict[str, Any],
    held: dict[str, int],
    unreadable: bool,
) -> None:
    """The Stubber checks each answer against botocore's DescribeTrainingJob output shape. A plain
    job beside the odd one shows the pass goes on and still counts what it can."""
    stub.add_response("list_training_jobs", _listing("odd", "plain"), {"StatusEquals": "InProgress", "MaxResults": 2})
    stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})
    stub.add_response(
        "describe_training_job", _description("odd", ResourceConfig=resources, **extra), {"TrainingJobName": "odd"}
    )
    stub.add_response("describe_training_job", _description("plain"), {"TrainingJobName": "plain"})

    outside = service.outside_in_progress([])

    expected = {"odd": held} if held else {}
    assert outside == {**expected, "plain": {G5: 1}}
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert [getattr(record, "training_job", None) for record in warnings] == (["odd"] if unreadable else [])


def test_a_job_waiting_for_its_preferred_instance_type_is_described_again_until_one_is_selected(
    stub: Stubber, service: SageMakerTrainingService
) -> None:
    choosing = {"InstancePreferences": PREFERENCES}
    chosen = {**choosing, "SelectedInstanceType": P5, "SelectedInstanceCount": 1}
    for resources in (choosing, chosen):
        stub.add_response("list_training_jobs", _listing("flex"), {"StatusEquals": "InProgress", "MaxResults": 2})
        stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})
        stub.add_response(
            "describe_training_job", _description("flex", ResourceConfig=resources), {"TrainingJobName": "flex"}
        )
    stub.add_response("list_training_jobs", _listing("flex"), {"StatusEquals": "InProgress", "MaxResults": 2})
    stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})

    before = service.outside_in_progress([])
    selected = service.outside_in_progress([])
    remembered = service.outside_in_progress([])

    assert before == {}
    assert selected == remembered == {"flex": {P5: 1}}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10) | st.sampled_from(["", G5, P5, "ml.c5.xlarge"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "InstanceType",
                    "InstanceCount",
                    "InstanceGroups",
                    "InstancePreferences",
                    "SelectedInstanceType",
                    "SelectedInstanceCount",
                    "VolumeSizeInGB",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@given(resources=JSON)
def test_no_resource_config_breaks_the_count(resources: Any) -> None:
    """Whatever ResourceConfig holds (even what botocore would never parse), reading it never raises
    and counts only non-negative instance counts of named instance types."""
    held = held_instances({"TrainingJobName": "any", "ResourceConfig": resources})

    assert all(isinstance(kind, str) and kind for kind in held.counts)
    assert all(isinstance(count, int) and count >= 0 for count in held.counts.values())


def test_a_failed_listing_is_raised_typed(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_client_error("list_training_jobs", "ThrottlingException", "Rate exceeded")

    with pytest.raises(TrainingServiceError) as failed:
        service.outside_in_progress([])

    assert failed.value.operation == "ListTrainingJobs"


# ------------------------------------------------------------------------ against moto


def test_on_moto_an_attempt_is_created_tagged_and_described(sagemaker_client: Any) -> None:
    service = SageMakerTrainingService(sagemaker_client, stack=STACK)
    current = started("moto-created")
    name = current.attempts[0].training_job_name

    service.start_attempt(current)
    service.start_attempt(current)
    status = service.describe(name)
    arn = sagemaker_client.describe_training_job(TrainingJobName=name)["TrainingJobArn"]
    tags = sagemaker_client.list_tags(ResourceArn=arn)["Tags"]

    assert status is not None and status.name == name
    assert {"Key": "smq:job", "Value": "moto-created"} in tags
    assert {"Key": "smq:attempt", "Value": "1"} in tags
    assert {"Key": "smq:stack", "Value": STACK} in tags
    assert service.describe("moto-never-created") is None


def test_on_moto_outside_in_progress_crosses_pages() -> None:
    """Seven busy jobs, listed two per page, in a region no other test uses."""
    region = "eu-west-3"
    client = boto3.client("sagemaker", region_name=region)
    jobs = {f"busy-{index}": (G5 if index % 2 else P5, index + 1) for index in range(7)}
    for name, (kind, count) in jobs.items():
        client.create_training_job(**request(name, pool=kind, instances=count))
    client.create_training_job(**request("finished", pool=G5, instances=50))
    backend = sagemaker_backends[DEFAULT_ACCOUNT_ID][region]
    for name in jobs:
        backend.training_jobs[name].training_job_status = "InProgress"
    ours = ["busy-0", "busy-3"]

    outside = SageMakerTrainingService(client, page_size=2).outside_in_progress(ours)

    assert outside == {name: {kind: count} for name, (kind, count) in jobs.items() if name not in ours}
