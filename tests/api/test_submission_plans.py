"""Submission on training plans: a preference naming a plan's ARN is placed in the plan's pool, a
request pinned with `ResourceConfig.TrainingPlanArn` is a one-preference job there, an ARN the
configuration does not name is refused, and the request sent to SageMaker carries the plan's ARN."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from smq_lambda.domain.config.plan_document import PlanWindow, TrainingPlan, plan_pools
from smq_lambda.domain.placements.placement import Placement, pinned_request
from smq_lambda.errors import InvalidRequest
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.service.submission import SubmissionPolicy, new_job

from tests.api.builders import ALICE, G5, P5, POOLS, training_request
from tests.api.gateway import ApiGateway
from tests.api.refusals import assert_refused_and_nothing_written
from tests.support.fakes import FakeClock, FakeConfigSource, RecordingTrigger

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
    assert dict(job.where.instance_types) == {P5: 2}


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


def flexible_on(arn: str) -> dict[str, Any]:
    """A flexible request that names a plan for the whole job (`ResourceConfig.TrainingPlanArn`)."""
    request = preferring({"InstanceType": P5, "InstanceCount": 1}, {"InstanceType": G5, "InstanceCount": 4})
    request["ResourceConfig"]["TrainingPlanArn"] = arn
    return request


def tagged_on(arn: str) -> dict[str, Any]:
    """An SDK v2 estimator's request (one type and count) with the preferences tag and a job-level plan."""
    request = pinned_on(arn, instance_type=P5, instances=1)
    request["Tags"].append({"Key": "smq:instance-preferences", "Value": f"{P5}:1,{G5}:4"})
    return request


@pytest.mark.parametrize("request_", [flexible_on(ARN), tagged_on(ARN)], ids=["InstancePreferences", "the tag"])
def test_a_flexible_request_naming_a_plan_for_the_whole_job_is_refused(request_: Any) -> None:
    error = refusal(request_)

    assert error.field == "ResourceConfig.TrainingPlanArn"
    assert str(error) == (
        "ResourceConfig.TrainingPlanArn cannot be given with instance preferences "
        "(ResourceConfig.InstancePreferences or the smq:instance-preferences tag): a flexible job names a training "
        "plan per preference, so list the preferences in ResourceConfig.InstancePreferences and name training plan "
        "p5-reserved in the TrainingPlanArns of its ml.p5.48xlarge preference"
    )


@pytest.mark.parametrize(
    "request_", [flexible_on(OTHER_ARN), tagged_on(OTHER_ARN)], ids=["InstancePreferences", "the tag"]
)
def test_a_flexible_request_naming_no_configured_plan_is_refused_as_a_pinned_one_is(request_: Any) -> None:
    error = refusal(request_)
    pinned = refusal(pinned_on(OTHER_ARN))

    assert (error.field, str(error)) == (pinned.field, str(pinned))


EXPIRED = TrainingPlan(
    "p5-expired",
    "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-expired",
    P5,
    4,
    (
        PlanWindow(datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 1, 8, tzinfo=UTC)),
        PlanWindow(datetime(2025, 2, 1, tzinfo=UTC), datetime(2025, 2, 8, tzinfo=UTC)),
    ),
)
CLOSING = TrainingPlan(
    "p5-closing",
    "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-closing",
    P5,
    4,
    (PlanWindow(NOW.replace(hour=0), NOW.replace(hour=9, minute=10)),),
)
"""Its only window ends 10 minutes after NOW, inside its 15-minute stop margin: it takes no start."""
LATER = TrainingPlan(
    "p5-later",
    "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-later",
    P5,
    4,
    (PlanWindow(NOW.replace(month=4), NOW.replace(month=5)),),
)
DATED = SchedulerConfig(
    pools={**POOLS, **plan_pools({plan.name: plan for plan in (EXPIRED, CLOSING, LATER)})},
    training_plans={plan.name: plan for plan in (EXPIRED, CLOSING, LATER)},
)


@pytest.mark.parametrize(
    ("request_", "field", "message"),
    [
        (
            pinned_on(EXPIRED.arn),
            "ResourceConfig.TrainingPlanArn",
            (
                "ResourceConfig.TrainingPlanArn: training plan p5-expired has no window left (its last, "
                "2025-02-01T00:00:00Z to 2025-02-08T00:00:00Z, took its last start at 2025-02-07T23:45:00Z, "
                "900 s before its end), so the job could never start there"
            ),
        ),
        (
            preferring({"InstanceType": P5, "InstanceCount": 1, "TrainingPlanArns": [EXPIRED.arn]}, {"InstanceType": G5, "InstanceCount": 1}),
            "ResourceConfig.InstancePreferences[0].TrainingPlanArns[0]",
            "ResourceConfig.InstancePreferences[0].TrainingPlanArns[0]: training plan p5-expired has no window left",
        ),
        (
            pinned_on(CLOSING.arn),
            "ResourceConfig.TrainingPlanArn",
            (
                "ResourceConfig.TrainingPlanArn: training plan p5-closing has no window left (its last, "
                "2025-03-01T00:00:00Z to 2025-03-01T09:10:00Z, took its last start at 2025-03-01T08:55:00Z, "
                "900 s before its end), so the job could never start there"
            ),
        ),
    ],
    ids=["pinned, its windows past", "a preference, its windows past", "its last window inside the stop margin"],
)  # fmt: skip
def test_a_job_on_a_plan_with_no_window_left_is_refused_naming_the_plan_and_its_last_window(
    request_: Any, field: str, message: str
) -> None:
    error = refusal(request_, DATED)

    assert error.field == field
    assert str(error).startswith(message)


def test_a_job_on_a_plan_whose_window_opens_later_is_queued() -> None:
    assert dict(submit(pinned_on(LATER.arn), DATED).demand) == {"plan:p5-later": 2}


@pytest.fixture
def config() -> FakeConfigSource:
    """The API's configuration: CONFIG's plan p5-reserved, and EXPIRED, whose windows ended before the API's clock."""
    source = FakeConfigSource()
    plans = {plan.name: plan for plan in (PLAN, EXPIRED)}
    source.config = SchedulerConfig(pools={**POOLS, **plan_pools(plans)}, training_plans=plans)
    return source


@pytest.mark.parametrize(
    ("request_body", "field", "rule"),
    [
        (flexible_on(ARN), "ResourceConfig.TrainingPlanArn", "cannot be given with instance preferences"),
        (tagged_on(ARN), "ResourceConfig.TrainingPlanArn", "cannot be given with instance preferences"),
        (pinned_on(EXPIRED.arn), "ResourceConfig.TrainingPlanArn", "training plan p5-expired has no window left"),
    ],
    ids=["a plan for a flexible job", "a plan for a tagged flexible job", "a plan with no window left"],
)
def test_the_api_refuses_them_with_a_400_and_writes_nothing(
    api: ApiGateway,
    dump_table: Callable[[], list[dict[str, Any]]],
    trigger: RecordingTrigger,
    clock: FakeClock,
    request_body: dict[str, Any],
    field: str,
    rule: str,
) -> None:
    clock.advance(EXPIRED.windows[-1].end + timedelta(days=1) - clock())
    assert_refused_and_nothing_written(api, dump_table, trigger, request_body, field, rule)
