"""Training jobs outside the queue: the listings paged through, each job described once, and the
instances every documented shape of job holds."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st
from moto.core import DEFAULT_ACCOUNT_ID
from smq_lambda.adapters.sagemaker import SageMakerTrainingService
from smq_lambda.domain.sagemaker.held_instances import held_instances
from smq_lambda.errors import TrainingServiceError

from tests.adapters.builders import G5, P5, T0
from tests.adapters.sagemaker.support import NO_RESOURCE_CONFIG, training_job_description


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
            "describe_training_job", training_job_description(name, ResourceConfig=resources), {"TrainingJobName": name}
        )

    outside = service.outside_in_progress(["ours-1", "ours-2"])

    assert outside == {"ext-a": {G5: 3}, "ext-b": {P5: 2, G5: 1}, "ext-c": {"ml.c5.xlarge": 4}}


def test_outside_in_progress_describes_a_job_once(stub: Stubber, service: SageMakerTrainingService) -> None:
    stub.add_response("list_training_jobs", _listing("ext-a"), {"StatusEquals": "InProgress", "MaxResults": 2})
    stub.add_response("list_training_jobs", _listing(), {"StatusEquals": "Stopping", "MaxResults": 2})
    stub.add_response("describe_training_job", training_job_description("ext-a"), {"TrainingJobName": "ext-a"})
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
    by_hand, scripted = training_job_description("by-hand"), training_job_description("scripted")
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
        stub.add_response("describe_training_job", training_job_description("by-hand"))
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
        "describe_training_job",
        training_job_description("odd", ResourceConfig=resources, **extra),
        {"TrainingJobName": "odd"},
    )
    stub.add_response("describe_training_job", training_job_description("plain"), {"TrainingJobName": "plain"})

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
            "describe_training_job",
            training_job_description("flex", ResourceConfig=resources),
            {"TrainingJobName": "flex"},
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
