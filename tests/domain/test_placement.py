"""A flexible request's placements, and the request the queue sends for a placement."""

from __future__ import annotations

from smq_lambda.domain.jobs.model import demand_of
from smq_lambda.domain.placements.placement import Placement, pinned_request, placements_of, request_as_sent

FLEXIBLE = {
    "EnableManagedSpotTraining": True,
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200},
    "ResourceConfig": {
        "VolumeSizeInGB": 50,
        "InstanceCount": 2,
        "InstancePreferences": [
            {"InstanceType": "ml.p4d.24xlarge"},
            {"InstanceType": "ml.g5.48xlarge", "InstanceCount": 4, "TrainingPlanArns": ["arn:plan"]},
        ],
    },
}


def test_preferences_become_placements_in_order_with_the_request_count_by_default() -> None:
    assert placements_of(FLEXIBLE) == (
        Placement("ml.p4d.24xlarge", 2, spot=True),
        Placement("ml.g5.48xlarge", 4, training_plan_arns=("arn:plan",), spot=True),
    )
    assert demand_of(FLEXIBLE) == {"ml.p4d.24xlarge": 2}


def test_a_pinned_request_has_no_placements() -> None:
    assert placements_of({"ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1}}) == ()


def test_the_request_sent_names_only_the_chosen_type_and_leaves_the_stored_one_alone() -> None:
    sent = pinned_request(FLEXIBLE, Placement("ml.g5.48xlarge", 4, spot=True))
    assert sent["ResourceConfig"] == {"VolumeSizeInGB": 50, "InstanceCount": 4, "InstanceType": "ml.g5.48xlarge"}
    assert sent["EnableManagedSpotTraining"] is True
    assert "InstancePreferences" in FLEXIBLE["ResourceConfig"]


def test_an_on_demand_placement_of_a_spot_request_drops_the_spot_members() -> None:
    sent = pinned_request(FLEXIBLE, Placement("ml.p4d.24xlarge", 2, training_plan_arn="arn:plan"))
    assert sent["EnableManagedSpotTraining"] is False
    assert sent["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600}
    assert sent["ResourceConfig"]["TrainingPlanArn"] == "arn:plan"


def test_a_pinned_job_is_sent_as_submitted() -> None:
    request = {"ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1}}
    assert request_as_sent(request, None) is request
    assert request_as_sent(FLEXIBLE, Placement("ml.g5.48xlarge", 4))["ResourceConfig"]["InstanceCount"] == 4
