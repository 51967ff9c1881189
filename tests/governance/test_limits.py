"""Tags and limits: every violation at once, at submission and for jobs started outside the queue."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.governance.actions import NotifyPolicy, StopOutsideJob
from smq_lambda.governance.limits import UNKNOWN_CREATOR, check_outside_job, violations
from smq_lambda.governance.policy import Policy

from .builders import ROLE, description, request

STRICT = Policy(
    required_tags=("project", "team"),
    allowed_instance_types=("ml.g5.xlarge", "ml.g5.2xlarge"),
    max_instance_count=4,
    max_runtime_seconds=7200,
    allowed_role_arns=(ROLE,),
)
OTHER_ROLE = "arn:aws:iam::123456789012:role/Other"
TWO_TAGS = [{"Key": "project", "Value": "vision"}, {"Key": "team", "Value": "ml"}]


def groups(*members: tuple[str, int]) -> dict[str, Any]:
    return {"InstanceGroups": [{"InstanceGroupName": f"g{index}", "InstanceType": instance_type,
                                "InstanceCount": count} for index, (instance_type, count) in enumerate(members)]}  # fmt: skip


def preferences(*members: tuple[str, int | None]) -> dict[str, Any]:
    """A flexible ResourceConfig; a None count is left out (the one in ResourceConfig serves)."""
    return {"InstancePreferences": [{"InstanceType": instance_type, **({} if count is None else {"InstanceCount": count})}
                                    for instance_type, count in members]}  # fmt: skip


CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    ("compliant", request(Tags=TWO_TAGS), []),
    ("missing tag", request(), [("Tags.team", "required_tags")]),
    ("no tags at all", request(Tags=None), [("Tags.project", "required_tags"), ("Tags.team", "required_tags")]),
    ("empty tag value", request(Tags=[*TWO_TAGS[:1], {"Key": "team", "Value": " "}]), [("Tags.team", "required_tags")]),
    ("disallowed type", request(Tags=TWO_TAGS, ResourceConfig={"InstanceType": "ml.p5.48xlarge", "InstanceCount": 1}),
     [("ResourceConfig.InstanceType", "allowed_instance_types")]),
    ("too many", request(Tags=TWO_TAGS, ResourceConfig={"InstanceType": "ml.g5.xlarge", "InstanceCount": 5}),
     [("ResourceConfig.InstanceCount", "max_instance_count")]),
    ("exactly the max", request(Tags=TWO_TAGS, ResourceConfig={"InstanceType": "ml.g5.xlarge", "InstanceCount": 4}),
     []),
    ("groups: one disallowed", request(Tags=TWO_TAGS, ResourceConfig=groups(("ml.g5.xlarge", 1), ("ml.p4d.24xlarge", 1))),
     [("ResourceConfig.InstanceGroups[1].InstanceType", "allowed_instance_types")]),
    ("groups: total over the max", request(Tags=TWO_TAGS, ResourceConfig=groups(("ml.g5.xlarge", 3), ("ml.g5.2xlarge", 2))),
     [("ResourceConfig.InstanceGroups", "max_instance_count")]),
    ("preferences: one disallowed", request(Tags=TWO_TAGS, ResourceConfig=preferences(("ml.g5.xlarge", 1), ("ml.p4d.24xlarge", 1))),
     [("ResourceConfig.InstancePreferences[1].InstanceType", "allowed_instance_types")]),
    ("preferences: each within the max", request(Tags=TWO_TAGS, ResourceConfig=preferences(("ml.g5.xlarge", 4), ("ml.g5.2xlarge", 3))),
     []),
    ("preferences: one over the max", request(Tags=TWO_TAGS, ResourceConfig=preferences(("ml.g5.xlarge", 2), ("ml.g5.2xlarge", 5))),
     [("ResourceConfig.InstancePreferences[1].InstanceCount", "max_instance_count")]),
    ("preferences sharing a count over the max",
     request(Tags=TWO_TAGS, ResourceConfig={**preferences(("ml.g5.xlarge", None), ("ml.g5.2xlarge", None)), "InstanceCount": 5}),
     [("ResourceConfig.InstanceCount", "max_instance_count")]),
    ("runtime over", request(Tags=TWO_TAGS, StoppingCondition={"MaxRuntimeInSeconds": 7201}),
     [("StoppingCondition.MaxRuntimeInSeconds", "max_runtime_seconds")]),
    ("runtime missing", request(Tags=TWO_TAGS, StoppingCondition={}),
     [("StoppingCondition.MaxRuntimeInSeconds", "max_runtime_seconds")]),
    ("role", request(Tags=TWO_TAGS, RoleArn=OTHER_ROLE), [("RoleArn", "allowed_role_arns")]),
    ("everything at once",
     request(Tags=None, RoleArn=OTHER_ROLE, StoppingCondition={"MaxRuntimeInSeconds": 86400},
             ResourceConfig={"InstanceType": "ml.p5.48xlarge", "InstanceCount": 8}),
     [("Tags.project", "required_tags"), ("Tags.team", "required_tags"),
      ("ResourceConfig.InstanceType", "allowed_instance_types"), ("ResourceConfig.InstanceCount", "max_instance_count"),
      ("StoppingCondition.MaxRuntimeInSeconds", "max_runtime_seconds"), ("RoleArn", "allowed_role_arns")]),
    ("no members at all", {},
     [("Tags.project", "required_tags"), ("Tags.team", "required_tags"),
      ("ResourceConfig.InstanceType", "allowed_instance_types"), ("ResourceConfig.InstanceCount", "max_instance_count"),
      ("StoppingCondition.MaxRuntimeInSeconds", "max_runtime_seconds"), ("RoleArn", "allowed_role_arns")]),
    ("malformed members", {"Tags": "x", "ResourceConfig": [], "StoppingCondition": 5, "RoleArn": {"a": 1}},
     [("Tags.project", "required_tags"), ("Tags.team", "required_tags"),
      ("ResourceConfig.InstanceType", "allowed_instance_types"), ("ResourceConfig.InstanceCount", "max_instance_count"),
      ("StoppingCondition.MaxRuntimeInSeconds", "max_runtime_seconds"), ("RoleArn", "allowed_role_arns")]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "checked", "expected"), CASES, ids=[case[0] for case in CASES])
def test_every_violation_is_named_at_once(case: str, checked: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    found = violations(checked, STRICT)

    assert [(violation.field, violation.rule) for violation in found] == expected
    assert all(violation.message.startswith(violation.field) for violation in found)


def test_the_default_policy_allows_anything() -> None:
    assert violations({}, Policy()) == []
    assert violations(request(ResourceConfig=groups(("ml.p5.48xlarge", 64))), Policy()) == []


@pytest.mark.parametrize(
    "tags",
    [TWO_TAGS, {"project": "vision", "team": "ml"}],
    ids=["ListTags list", "event map"],
)
def test_tags_passed_beside_a_description_replace_its_own(tags: object) -> None:
    described = description("outside-job", Tags=[])

    assert violations(described, Policy(required_tags=("project", "team")), tags=tags) == []
    assert len(violations(described, Policy(required_tags=("project", "team")))) == 2


def test_messages_say_what_is_allowed() -> None:
    [type_violation] = violations(request(ResourceConfig={"InstanceType": "ml.p5.48xlarge", "InstanceCount": 1}),
                                  Policy(allowed_instance_types=("ml.g5.xlarge",)))  # fmt: skip
    [count_violation] = violations(request(ResourceConfig=groups(("ml.g5.xlarge", 3), ("ml.g5.xlarge", 3))),
                                   Policy(max_instance_count=4))  # fmt: skip

    assert type_violation.message == (
        "ResourceConfig.InstanceType ml.p5.48xlarge is not an allowed instance type (allowed: ml.g5.xlarge)"
    )
    assert count_violation.message == (
        "ResourceConfig.InstanceGroups: the job asks for 6 instances; the policy allows at most 4 per job"
    )


def broken(name: str = "rogue", **members: Any) -> dict[str, Any]:
    """An outside job that breaks STRICT twice: no `team` tag, an instance type not allowed."""
    return description(name, "InProgress", "Starting",
                       ResourceConfig={"InstanceType": "ml.p5.48xlarge", "InstanceCount": 1},
                       Tags={"project": "vision"}, **members)  # fmt: skip


def test_an_outside_job_breaking_the_policy_is_stopped_and_notified() -> None:
    actions = check_outside_job(broken(), STRICT, started_by="arn:aws:sts::123456789012:assumed-role/Dev/bob")

    assert [type(action) for action in actions] == [StopOutsideJob, NotifyPolicy]
    stop, notice = actions
    assert isinstance(stop, StopOutsideJob) and isinstance(notice, NotifyPolicy)
    assert stop.training_job_name == "rogue"
    assert [violation.rule for violation in stop.violations] == ["required_tags", "allowed_instance_types"]
    assert stop.started_by == "arn:aws:sts::123456789012:assumed-role/Dev/bob"
    assert stop.reason.startswith("stopped by the smq policy: Tags.team is required")
    assert notice.subject == "smq policy: stopped training job rogue (allowed_instance_types, required_tags)"
    assert "training job rogue" in notice.message
    assert "Tags.team is required by the policy (tag key 'team') (rule required_tags)" in notice.message
    assert "ml.p5.48xlarge is not an allowed instance type" in notice.message
    assert "Started by: arn:aws:sts::123456789012:assumed-role/Dev/bob" in notice.message
    assert "arn:aws:sagemaker:us-east-1:123456789012:training-job/rogue" in notice.message
    assert f"Execution role: {broken()['RoleArn']}" in notice.message


def test_an_unknown_creator_is_said_to_be_unknown() -> None:
    _, notice = check_outside_job(broken(), STRICT)

    assert isinstance(notice, NotifyPolicy)
    assert f"Started by: {UNKNOWN_CREATOR}" in notice.message


@pytest.mark.parametrize(
    ("status", "secondary"),
    [("InProgress", "Stopping"), ("Stopping", "Stopping"), ("Stopped", "Stopped"), ("Completed", "Completed"),
     ("Failed", "Failed")],
)  # fmt: skip
def test_a_job_no_longer_running_is_left_alone(status: str, secondary: str) -> None:
    assert check_outside_job(broken(TrainingJobStatus=status, SecondaryStatus=secondary), STRICT) == []


@pytest.mark.parametrize("secondary", ["Starting", "Pending", "Downloading", "Training", "Interrupted"])
def test_a_running_job_is_checked_whatever_its_secondary_status(secondary: str) -> None:
    assert len(check_outside_job(broken(SecondaryStatus=secondary), STRICT)) == 2


def test_a_compliant_outside_job_is_left_alone() -> None:
    compliant = description("ok", "InProgress", "Starting", Tags={"project": "vision", "team": "ml"})

    assert check_outside_job(compliant, STRICT) == []


JOB_NAMES = st.from_regex(r"[a-zA-Z0-9](-?[a-zA-Z0-9]){0,31}", fullmatch=True)
CREATORS = st.none() | st.text(max_size=300)


@given(JOB_NAMES, st.lists(st.sampled_from(["required_tags", "allowed_role_arns", "max_instance_count"]), min_size=1),
       CREATORS)  # fmt: skip
def test_the_subject_is_printable_ascii_of_at_most_100_characters(
    name: str, rules: list[str], creator: str | None
) -> None:
    policy = Policy(required_tags=("project",), allowed_role_arns=(ROLE,), max_instance_count=1)
    job = description(name, "InProgress", "Starting", RoleArn=OTHER_ROLE, Tags={},
                      ResourceConfig={"InstanceType": "ml.g5.xlarge", "InstanceCount": 2})  # fmt: skip
    actions = check_outside_job(job, policy, started_by=creator)
    notices = [action for action in actions if isinstance(action, NotifyPolicy)]

    assert len(notices) == 1
    subject = notices[0].subject
    assert len(subject) <= 100
    assert all(" " <= char <= "~" for char in subject)
    assert name in notices[0].message


def test_a_long_name_is_cut_to_fit_the_subject() -> None:
    name = "a" * 63
    _, notice = check_outside_job(broken(name), STRICT)

    assert isinstance(notice, NotifyPolicy)
    assert len(notice.subject) == 100 and notice.subject.endswith("...")
    assert name in notice.subject
