"""What a request asks for, read once at submission (domain/placements/requested_resources.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from smq_lambda.domain.config.plan_document import PlanWindow, TrainingPlan
from smq_lambda.domain.placements.placement import Placement, pinned_request
from smq_lambda.domain.placements.purchase import Purchase
from smq_lambda.domain.placements.requested_resources import RequestedResources, requested_resources
from smq_lambda.domain.sagemaker.instance_groups import RequestedGroup
from smq_lambda.domain.warm.warm_match import warm_pool_key
from smq_lambda.errors import InvalidRequest

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
G5, P5, C5 = "ml.g5.xlarge", "ml.p5.48xlarge", "ml.c5.xlarge"
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved"
PLAN = TrainingPlan("p5-reserved", ARN, P5, 4, (PlanWindow(NOW, NOW.replace(day=2)),))
PLANS = {PLAN.name: PLAN}


def request(resources: dict[str, Any], **members: Any) -> dict[str, Any]:
    return {"RoleArn": "arn:aws:iam::123456789012:role/train", "ResourceConfig": resources, **members}


def single(instance_type: str, count: int) -> RequestedGroup:
    return RequestedGroup(instance_type, count, "ResourceConfig.InstanceType", "ResourceConfig.InstanceCount")


def preference(index: int, instance_type: str, count: int) -> RequestedGroup:
    path = f"ResourceConfig.InstancePreferences[{index}]"
    return RequestedGroup(instance_type, count, f"{path}.InstanceType", f"{path}.InstanceCount")


ON_DEMAND = request({"InstanceType": G5, "InstanceCount": 2})
SPOT = request({"InstanceType": G5, "InstanceCount": 1}, EnableManagedSpotTraining=True)
SPOT_ONLY = request(
    {"InstanceType": G5, "InstanceCount": 1},
    EnableManagedSpotTraining=True,
    Tags=[{"Key": "smq:spot-only", "Value": "true"}],
)
FLEXIBLE = request(
    {
        "KeepAlivePeriodInSeconds": 300,
        "InstancePreferences": [
            {"InstanceType": P5, "InstanceCount": 2, "TrainingPlanArns": [ARN]},
            {"InstanceType": G5, "InstanceCount": 4},
        ],
    }
)
ON_PLAN = Placement(P5, 2, pool="plan:p5-reserved", training_plan_arns=(ARN,), training_plan_arn=ARN)
PINNED_ON_PLAN = request({"InstanceType": P5, "InstanceCount": 2, "TrainingPlanArn": ARN})
WARM = request({"InstanceType": G5, "InstanceCount": 1, "KeepAlivePeriodInSeconds": 600})
GROUPS = request(
    {
        "InstanceGroups": [
            {"InstanceGroupName": "gpu", "InstanceType": P5, "InstanceCount": 2},
            {"InstanceGroupName": "cpu", "InstanceType": C5, "InstanceCount": 4},
        ]
    }
)


def _warm(placement: Placement, body: dict[str, Any]) -> Placement:
    return replace(placement, warm_key=warm_pool_key(pinned_request(body, placement)))


@pytest.mark.parametrize(
    ("body", "expected", "demand"),
    [
        pytest.param(
            ON_DEMAND,
            RequestedResources((single(G5, 2),), (), (), Purchase.ON_DEMAND, 0, None),
            {G5: 2},
            id="pinned on demand",
        ),
        pytest.param(
            SPOT,
            RequestedResources((single(G5, 1),), (), (), Purchase.SPOT, 0, None),
            {G5: 1},
            id="pinned spot",
        ),
        pytest.param(
            SPOT_ONLY,
            RequestedResources((single(G5, 1),), (), (), Purchase.SPOT_ONLY, 0, None),
            {G5: 1},
            id="pinned spot only",
        ),
        pytest.param(
            FLEXIBLE,
            RequestedResources(
                (),
                (preference(0, P5, 2), preference(1, G5, 4)),
                (_warm(ON_PLAN, FLEXIBLE), _warm(Placement(G5, 4), FLEXIBLE)),
                Purchase.ON_DEMAND,
                300,
                None,
            ),
            {"plan:p5-reserved": 2},
            id="flexible with preferences, the first on a plan",
        ),
        pytest.param(
            PINNED_ON_PLAN,
            RequestedResources((single(P5, 2),), (), (ON_PLAN,), Purchase.ON_DEMAND, 0, None),
            {"plan:p5-reserved": 2},
            id="pinned on a training plan",
        ),
        pytest.param(
            WARM,
            RequestedResources((single(G5, 1),), (), (), Purchase.ON_DEMAND, 600, warm_pool_key(WARM)),
            {G5: 1},
            id="warm keep-alive",
        ),
        pytest.param(
            GROUPS,
            RequestedResources(
                (
                    RequestedGroup(
                        P5,
                        2,
                        "ResourceConfig.InstanceGroups[0].InstanceType",
                        "ResourceConfig.InstanceGroups[0].InstanceCount",
                    ),
                    RequestedGroup(
                        C5,
                        4,
                        "ResourceConfig.InstanceGroups[1].InstanceType",
                        "ResourceConfig.InstanceGroups[1].InstanceCount",
                    ),
                ),
                (),
                (),
                Purchase.ON_DEMAND,
                0,
                None,
            ),
            {P5: 2, C5: 4},
            id="instance groups",
        ),
    ],
)
def test_a_request_is_read_once_into_what_it_asks_for(
    body: dict[str, Any], expected: RequestedResources, demand: dict[str, int]
) -> None:
    requested = requested_resources(body, PLANS, NOW)
    assert requested == expected
    assert requested.demand == demand and list(requested.demand) == list(demand)
    assert requested.heterogeneous is (body is GROUPS)


def test_a_plan_the_configuration_does_not_name_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidRequest) as caught:
        requested_resources(PINNED_ON_PLAN, {}, NOW)
    assert caught.value.field == "ResourceConfig.TrainingPlanArn"
