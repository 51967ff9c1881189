"""Submission on training plans: a preference naming a plan's ARN is placed in the plan's pool, a
request pinned with `ResourceConfig.TrainingPlanArn` is a one-preference job there, an ARN the
configuration does not name is refused, and the request sent to SageMaker carries the plan's ARN."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from smq_lambda.domain.placement import Placement, pinned_request
from smq_lambda.domain.plan_document import PlanWindow, TrainingPlan, plan_pools
from smq_lambda.errors import InvalidRequest
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.service.submission import SubmissionPolicy, new_job

from tests.api.builders import ALICE, G5, P5, POOLS, training_request

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved"
OTHER_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/elsewhere"
PLAN = TrainingPlan("p5-reserved", ARN, P5, 4, (PlanWindow(NOW, NOW.replace(day=2)),))
CONFIG = SchedulerConfig(pools={**POOLS, **plan_pools({PLAN.name: PLAN})}, training_plans={PLAN.name: PLAN})
ON_PLAN = Placement(P5, 2, pool="plan:p5-reserved", training_plan_arns=(ARN,), training_plan_arn=ARN)


def submit(request: Any, config: SchedulerConfig = CONFIG) -> Any:
    return new_job(request, owner=ALICE, config=config, policy=SubmissionPolicy(), now=NOW, job_id="0" * 32)


def refusal(request: Any, config: SchedulerConfig = CONFIG) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        submit(request, config)
    return caught.value


def preferring(*preferences: dict[str, Any]) -> dict[str, Any]:
    return training_request(ResourceConfig={"InstancePreferences": list(preferences), "VolumeSizeInGB": 30})


def pinned_on(arn: str, instance_type: str = P5, instances: int = 2) -> dict[str, Any]:
    resources = {
        "InstanceType": instance_type,
        "InstanceCount": instances,
        "VolumeSizeInGB": 30,
        "TrainingPlanArn": arn,
    }
    return training_request(ResourceConfig=resources)


def test_a_preference_naming_a_plan_is_placed_in_its_pool() -> None:
    job = submit(
        preferring(
            {"InstanceType": P5, "InstanceCount": 2, "TrainingPlanArns": [ARN]},
            {"InstanceType": G5, "InstanceCount": 4},
        )
    )
    assert job.placements == (ON_PLAN, Placement(G5, 4))
    assert dict(job.demand) == {"plan:p5-reserved": 2}
    assert dict(job.instance_types) == {P5: 2}


def test_a_pinned_request_on_a_plan_is_a_one_preference_job_in_its_pool() -> None:
    job = submit(pinned_on(ARN))
    assert job.placements == (ON_PLAN,)
    assert dict(job.demand) == {"plan:p5-reserved": 2}


def test_the_request_sent_to_sagemaker_names_the_plan() -> None:
    job = submit(preferring({"InstanceType": P5, "InstanceCount": 2, "TrainingPlanArns": [ARN]}))
    sent = pinned_request(job.request, job.placements[0])
    assert sent["ResourceConfig"] == {
        "InstanceType": P5,
        "InstanceCount": 2,
        "VolumeSizeInGB": 30,
        "TrainingPlanArn": ARN,
    }


def test_the_plan_instance_type_needs_no_pool_of_its_own() -> None:
    config = SchedulerConfig(pools=plan_pools({PLAN.name: PLAN}), training_plans={PLAN.name: PLAN})
    assert dict(submit(pinned_on(ARN), config).demand) == {"plan:p5-reserved": 2}


@pytest.mark.parametrize(
    ("request_", "field", "words"),
    [
        (pinned_on(OTHER_ARN), "ResourceConfig.TrainingPlanArn", "not a training plan of this queue's configuration"),
        (
            preferring({"InstanceType": P5, "InstanceCount": 1, "TrainingPlanArns": [OTHER_ARN]}),
            "ResourceConfig.InstancePreferences[0].TrainingPlanArns[0]",
            "not a training plan",
        ),
        (
            pinned_on(ARN, instance_type=G5),
            "ResourceConfig.InstanceType",
            "not the instance type of training plan p5-reserved",
        ),
        (
            preferring({"InstanceType": G5, "InstanceCount": 1, "TrainingPlanArns": [ARN]}),
            "ResourceConfig.InstancePreferences[0].InstanceType",
            "not the instance type",
        ),
        (pinned_on(ARN, instances=5), "ResourceConfig.TrainingPlanArn", "holds only 4, so it could never start"),
    ],
    ids=["unknown plan", "unknown plan in a preference", "other type", "other type in a preference", "too large"],
)
def test_what_no_configured_plan_can_run_is_refused_naming_the_field(request_: Any, field: str, words: str) -> None:
    error = refusal(request_)
    assert error.field == field
    assert words in str(error)
