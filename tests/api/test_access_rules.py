"""Access rules (domain/access/access.py): the operators' document, and what each caller may do under it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.access.access import (
    FALLBACK,
    UNRESTRICTED,
    AccessPolicy,
    AccessRule,
    AccessRules,
    parse_access_rules,
)
from smq_lambda.domain.access.principals import OwnerScope
from smq_lambda.domain.jobs.model import MAX_PRIORITY, MIN_PRIORITY
from smq_lambda.errors import AccessDenied, ConfigError

ACCOUNT = "123456789012"
ALICE = f"arn:aws:iam::{ACCOUNT}:user/alice"
BOB = f"arn:aws:iam::{ACCOUNT}:user/bob"
LEAD_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/ResearchLead/carol"
LEAD_OTHER_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/ResearchLead/dave"
PIPELINE_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/nightly-pipeline/run-1"
PIPELINE_OTHER_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/nightly-pipeline/run-2"
OPERATOR_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator/erin"
TRAINING_ROLE = f"arn:aws:iam::{ACCOUNT}:role/SageMaker-Research"
OTHER_TRAINING_ROLE = f"arn:aws:iam::{ACCOUNT}:role/SageMaker-Finance"

DOCUMENT: dict[str, Any] = {
    "rules": [
        {
            "name": "research-leads",
            "principals": [f"arn:aws:iam::{ACCOUNT}:role/teams/ResearchLead"],
            "max_priority": 10_000,
            "role_arns": [f"arn:aws:iam::{ACCOUNT}:role/SageMaker-Research*"],
        },
        {
            "name": "pipelines",
            "principals": [f"arn:aws:iam::{ACCOUNT}:role/*-pipeline"],
            "max_priority": 50,
            "owner": "role",
        },
        {"name": "alice", "principals": [ALICE], "max_priority": 500},
        {"name": "everyone-again", "principals": ["*"], "max_priority": 999},
    ],
    "default": {"max_priority": 100},
}
RULES = parse_access_rules(DOCUMENT, source="test")
POLICY = AccessPolicy(admins=(f"arn:aws:iam::{ACCOUNT}:role/QueueOperator",), rules=RULES)


def test_a_document_becomes_rules_in_order() -> None:
    assert [rule.name for rule in RULES.rules] == ["research-leads", "pipelines", "alice", "everyone-again"]
    assert RULES.rules[1] == AccessRule(
        name="pipelines",
        principals=(f"arn:aws:iam::{ACCOUNT}:role/*-pipeline",),
        max_priority=50,
        role_arns=("*",),
        owner=OwnerScope.ROLE,
    )
    assert RULES.default == AccessRule(name="default", max_priority=100)


def test_an_empty_document_restricts_nothing() -> None:
    assert parse_access_rules({}, source="test") == UNRESTRICTED


@pytest.mark.parametrize(
    ("caller", "rule"),
    [
        (LEAD_SESSION, "research-leads"),
        (PIPELINE_SESSION, "pipelines"),
        (ALICE, "alice"),
        (BOB, "everyone-again"),
    ],
)
def test_the_first_rule_that_names_the_caller_applies(caller: str, rule: str) -> None:
    assert RULES.rule_for(caller).name == rule


def test_callers_no_rule_names_get_the_default() -> None:
    rules = parse_access_rules({"rules": DOCUMENT["rules"][:3], "default": {"max_priority": 7}}, source="test")

    assert rules.rule_for(BOB) == AccessRule(name="default", max_priority=7)


@pytest.mark.parametrize(
    ("caller", "priority", "role", "field", "rule"),
    [
        (LEAD_SESSION, 10_000, TRAINING_ROLE, None, None),
        (LEAD_SESSION, 10_001, TRAINING_ROLE, "Tags.priority", "research-leads"),
        (LEAD_SESSION, 5, OTHER_TRAINING_ROLE, "RoleArn", "research-leads"),
        (PIPELINE_SESSION, 50, OTHER_TRAINING_ROLE, None, None),
        (PIPELINE_SESSION, 51, TRAINING_ROLE, "Tags.priority", "pipelines"),
        (ALICE, 500, TRAINING_ROLE, None, None),
        (ALICE, MAX_PRIORITY, TRAINING_ROLE, "Tags.priority", "alice"),
        (BOB, MIN_PRIORITY, TRAINING_ROLE, None, None),
        (OPERATOR_SESSION, MAX_PRIORITY, OTHER_TRAINING_ROLE, None, None),
    ],
)
def test_what_a_caller_may_submit(caller: str, priority: int, role: str, field: str | None, rule: str | None) -> None:
    if field is None:
        POLICY.check_submission(caller, priority=priority, role_arn=role)
        return
    with pytest.raises(AccessDenied) as denied:
        POLICY.check_submission(caller, priority=priority, role_arn=role)

    assert (denied.value.field, denied.value.rule) == (field, rule)
    assert rule in denied.value.message and caller in denied.value.message


def test_a_rule_with_no_roles_lets_its_callers_submit_nothing() -> None:
    policy = AccessPolicy(rules=parse_access_rules({"default": {"role_arns": []}}, source="test"))

    with pytest.raises(AccessDenied) as denied:
        policy.check_submission(BOB, priority=0, role_arn=TRAINING_ROLE)

    assert (denied.value.field, denied.value.rule) == ("RoleArn", "default")
    assert "roles it allows: none" in denied.value.message


@pytest.mark.parametrize(
    ("owner", "caller", "allowed"),
    [
        (ALICE, ALICE, True),
        (ALICE, BOB, False),
        (ALICE, OPERATOR_SESSION, True),
        (LEAD_SESSION, LEAD_OTHER_SESSION, False),
        (PIPELINE_SESSION, PIPELINE_OTHER_SESSION, True),
        (PIPELINE_SESSION, LEAD_SESSION, False),
    ],
)
def test_who_may_change_a_job(owner: str, caller: str, allowed: bool) -> None:
    assert POLICY.may_change(owner, caller) is allowed


def test_the_fallback_lets_nobody_but_an_admin_jump_the_queue() -> None:
    policy = AccessPolicy(admins=(OPERATOR_SESSION,), rules=FALLBACK)

    policy.check_submission(ALICE, priority=0, role_arn=TRAINING_ROLE)
    policy.check_priority(OPERATOR_SESSION, MAX_PRIORITY)
    with pytest.raises(AccessDenied) as denied:
        policy.check_priority(ALICE, 1)

    assert denied.value.rule == "fallback-while-rules-are-invalid"


@given(cap=st.integers(MIN_PRIORITY, MAX_PRIORITY), priority=st.integers(MIN_PRIORITY, MAX_PRIORITY))
def test_a_cap_allows_exactly_the_priorities_up_to_it(cap: int, priority: int) -> None:
    policy = AccessPolicy(rules=AccessRules(default=AccessRule(name="default", max_priority=cap)))

    try:
        policy.check_priority(BOB, priority)
        allowed = True
    except AccessDenied as denied:
        assert denied.field == "priority"
        allowed = False

    assert allowed is (priority <= cap)


@given(priority=st.integers(MIN_PRIORITY, MAX_PRIORITY), role=st.text(max_size=100))
def test_an_admin_is_bound_by_no_rule(priority: int, role: str) -> None:
    policy = AccessPolicy(
        admins=(BOB,),
        rules=parse_access_rules({"default": {"max_priority": MIN_PRIORITY, "role_arns": []}}, source="t"),
    )

    policy.check_submission(BOB, priority=priority, role_arn=role)
    policy.check_priority(BOB, priority)
    assert policy.may_change(ALICE, BOB)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([], "must be a JSON object"),
        ({"rulez": []}, "unknown member(s) rulez"),
        ({"rules": {}}, "'rules' must be a list"),
        ({"rules": ["x"]}, "rules[0] must be an object"),
        ({"rules": [{"principals": ["*"], "max_prority": 5}]}, "rules[0] has unknown member(s) max_prority"),
        ({"rules": [{"max_priority": 5}]}, "rules[0].principals must be a non-empty list"),
        ({"rules": [{"principals": []}]}, "rules[0].principals must be a non-empty list"),
        ({"rules": [{"principals": "*"}]}, "rules[0].principals must be a non-empty list"),
        ({"rules": [{"principals": ["QueueOperator"]}]}, "rules[0].principals: 'QueueOperator' is not"),
        (
            {"rules": [{"principals": [f"arn:aws:iam::{ACCOUNT}:role/teams/*"]}]},
            "has a path and a wildcard",
        ),
        ({"rules": [{"principals": ["*"], "max_priority": "5"}]}, "rules[0].max_priority must be an integer"),
        ({"rules": [{"principals": ["*"], "max_priority": True}]}, "rules[0].max_priority must be an integer"),
        ({"rules": [{"principals": ["*"], "max_priority": MAX_PRIORITY + 1}]}, "must be an integer from"),
        ({"rules": [{"principals": ["*"], "role_arns": "*"}]}, "rules[0].role_arns must be a list"),
        ({"rules": [{"principals": ["*"], "role_arns": ["SageMaker"]}]}, "'SageMaker' is not '*' nor an IAM role"),
        ({"rules": [{"principals": ["*"], "owner": "team"}]}, "rules[0].owner must be one of session, role"),
        ({"rules": [{"principals": ["*"], "owner": ["role"]}]}, "rules[0].owner must be one of"),
        ({"rules": [{"principals": ["*"], "name": ""}]}, "rules[0].name must be a string of 1 to 64"),
        ({"rules": [{"principals": ["*"], "name": "a"}, {"principals": ["*"], "name": "a"}]}, "must be unique"),
        ({"rules": [{"principals": ["*"], "name": "default"}]}, "must be unique and not 'default'"),
        ({"default": {"principals": ["*"]}}, "default has unknown member(s) principals"),
        ({"default": {"name": "everyone"}}, "default has unknown member(s) name"),
        ({"default": []}, "default must be an object"),
    ],
)
def test_a_broken_document_is_refused_naming_what_is_wrong(document: object, problem: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_access_rules(document, source="SSM parameter /smq/test/access-rules")

    assert problem in str(refused.value)
    assert str(refused.value).startswith("SSM parameter /smq/test/access-rules")
