"""The configuration document's `training_plans` section: each plan a pool `plan:<name>`, every
refusal naming its key path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from smq_lambda.domain.config.config_document import ConfigDocumentError, parse_config_document
from smq_lambda.domain.config.plan_document import PlanWindow, TrainingPlan

P5 = "ml.p5.48xlarge"
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved"
WEEK = {"start": "2026-12-01T00:00:00Z", "end": "2026-12-08T00:00:00Z"}


def plan(**members: Any) -> dict[str, Any]:
    return {"arn": ARN, "instance_type": P5, "instances": 4, "windows": [WEEK], **members}


def document(*plans: tuple[str, dict[str, Any]], **sections: Any) -> dict[str, Any]:
    return {"pools": {P5: 8}, "training_plans": dict(plans), **sections}


def refused(value: dict[str, Any]) -> ConfigDocumentError:
    with pytest.raises(ConfigDocumentError) as caught:
        parse_config_document(value, source="doc")
    return caught.value


def test_a_plan_is_a_pool_of_its_instances_with_its_windows() -> None:
    parsed = parse_config_document(
        document(("p5-reserved", plan(stop_margin_s=600)), quotas={"vision": {"instances": {"plan:p5-reserved": 2}}}),
        source="doc",
    )

    start = datetime(2026, 12, 1, tzinfo=UTC)
    assert parsed.pools == {P5: 8, "plan:p5-reserved": 4}
    assert parsed.training_plans == {
        "p5-reserved": TrainingPlan("p5-reserved", ARN, P5, 4, (PlanWindow(start, start + timedelta(days=7)),), 600)
    }
    assert parsed.teams.quotas["vision"].instances == {"plan:p5-reserved": 2}


def test_the_stop_margin_defaults_to_15_minutes() -> None:
    assert parse_config_document(document(("p5", plan())), source="doc").training_plans["p5"].stop_margin_s == 900


LATER = {"start": "2026-12-08T00:00:00Z", "end": "2026-12-09T00:00:00+01:00"}


@pytest.mark.parametrize(
    ("value", "path", "problem"),
    [
        (
            document(("p5", plan(arn="arn:aws:sagemaker:us-east-1:1234:training-plan/x"))),
            "training_plans.p5.arn",
            "training plan ARN",
        ),
        (document(("p5", plan(arn=7))), "training_plans.p5.arn", "training plan ARN"),
        (document(("p5", plan()), ("again", plan())), "training_plans.again.arn", "also the ARN of training_plans.p5"),
        (document(("bad name", plan())), "training_plans.bad name", "letters, digits and hyphens"),
        (document(("p5", plan(instance_type="p5"))), "training_plans.p5.instance_type", "training instance type"),
        (document(("p5", plan(instances=0))), "training_plans.p5.instances", "at least 1"),
        (document(("p5", plan(instances=10**9))), "training_plans.p5.instances", "at most"),
        (document(("p5", plan(stop_margin_s=86_401))), "training_plans.p5.stop_margin_s", "at most 86400"),
        (document(("p5", plan(color="red"))), "training_plans.p5.color", "unknown key"),
        (
            document(("p5", {"arn": ARN, "instances": 1, "windows": [WEEK]})),
            "training_plans.p5.instance_type",
            "is required",
        ),
        (document(("p5", plan(windows=[]))), "training_plans.p5.windows", "1 to 100 windows"),
        (
            document(("p5", plan(windows=[{"start": "2026-12-01T00:00:00Z"}]))),
            "training_plans.p5.windows[0].end",
            "is required",
        ),
        (
            document(("p5", plan(windows=[{**WEEK, "end": "2026-12-01"}]))),
            "training_plans.p5.windows[0].end",
            "no offset",
        ),
        (document(("p5", plan(windows=[{**WEEK, "end": "soon"}]))), "training_plans.p5.windows[0].end", "ISO 8601"),
        (
            document(("p5", plan(windows=[{**WEEK, "end": WEEK["start"]}]))),
            "training_plans.p5.windows[0].end",
            "after its start",
        ),
        (
            document(("p5", plan(windows=[{"start": WEEK["start"], "end": "2026-12-01T00:15:00Z"}]))),
            "training_plans.p5.windows[0]",
            "no longer than the stop margin",
        ),
        (
            document(("p5", plan(windows=[LATER, WEEK]))),
            "training_plans.p5.windows[1].start",
            "before the end of the window",
        ),
        (
            document(("p5", plan(windows=[WEEK, {**LATER, "start": "2026-12-07T23:00:00Z"}]))),
            "training_plans.p5.windows[1].start",
            "before the end",
        ),
        ({"pools": {"plan:p5": 2}}, "pools.plan:p5", "declare the plan under training_plans"),
        (document(training_plans=[]), "training_plans", "JSON object"),
    ],
)
def test_bad_plans_are_refused_naming_the_key(value: dict[str, Any], path: str, problem: str) -> None:
    error = refused(value)
    assert error.path == path
    assert problem in error.problem


def test_windows_may_touch() -> None:
    parsed = parse_config_document(document(("p5", plan(windows=[WEEK, LATER]))), source="doc")
    assert len(parsed.training_plans["p5"].windows) == 2
