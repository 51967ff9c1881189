"""Who may do what, through the handler: access rules (403 naming the rule), admins that assume a
role, shared roles as owners, and who changed a priority."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smq_lambda.domain.access.access import FALLBACK, parse_access_rules

from tests.api.builders import ALICE, BOB, training_request
from tests.api.fake_access_rules import StaticAccessRules
from tests.api.gateway import ApiGateway
from tests.support.fakes import RecordingTrigger

ACCOUNT = "123456789012"
OPERATOR_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator/erin@example.com"
"""A session of builders.ADMIN (`role/QueueOperator`), as API Gateway reports the caller."""
PIPELINE = f"arn:aws:sts::{ACCOUNT}:assumed-role/nightly-pipeline/run-1"
PIPELINE_NEXT_RUN = f"arn:aws:sts::{ACCOUNT}:assumed-role/nightly-pipeline/run-2"
SSO_ALICE = f"arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_DataScientist_0123/alice@example.com"
SSO_BOB = f"arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_DataScientist_0123/bob@example.com"

RULES = {
    "rules": [
        {"name": "alice", "principals": [ALICE], "max_priority": 500},
        {
            "name": "pipelines",
            "principals": [f"arn:aws:iam::{ACCOUNT}:role/*-pipeline"],
            "max_priority": 10,
            "role_arns": [f"arn:aws:iam::{ACCOUNT}:role/Pipeline*"],
            "owner": "role",
        },
    ],
    "default": {"max_priority": 100},
}


def with_rules(access_rules: StaticAccessRules, document: dict[str, Any] = RULES) -> None:
    access_rules.rules = parse_access_rules(document, source="test")


def test_a_priority_above_the_callers_cap_is_refused_naming_the_rule(
    api: ApiGateway, access_rules: StaticAccessRules, dump_table: Callable[[], list[dict[str, Any]]]
) -> None:
    with_rules(access_rules)
    before = dump_table()

    reply = api.add(training_request("greedy", priority=101), caller=BOB)

    assert (reply.status, reply.field) == (403, "Tags.priority")
    assert "'default'" in reply.body["message"] and "up to 100" in reply.body["message"]
    assert dump_table() == before


def test_a_caller_named_by_a_rule_gets_that_rules_cap(api: ApiGateway, access_rules: StaticAccessRules) -> None:
    with_rules(access_rules)

    assert api.add(training_request("alices", priority=500), caller=ALICE).status == 202
    refused = api.add(training_request("too-high", priority=501), caller=ALICE)

    assert (refused.status, refused.field) == (403, "Tags.priority")
    assert "'alice'" in refused.body["message"]


def test_a_role_the_rule_does_not_list_is_refused(
    api: ApiGateway, access_rules: StaticAccessRules, trigger: RecordingTrigger
) -> None:
    with_rules(access_rules)

    reply = api.add(training_request("nightly", priority=1), caller=PIPELINE)

    assert (reply.status, reply.field) == (403, "RoleArn")
    assert "'pipelines'" in reply.body["message"]
    assert trigger.kicks == []


def test_a_priority_change_above_the_callers_cap_is_refused(api: ApiGateway, access_rules: StaticAccessRules) -> None:
    with_rules(access_rules)
    api.add(training_request("bobs", priority=5), caller=BOB)

    refused = api.set_priority("bobs", 1000, caller=BOB)
    allowed = api.set_priority("bobs", 100, caller=BOB)

    assert (refused.status, refused.field) == (403, "priority")
    assert "'default'" in refused.body["message"]
    assert (allowed.status, allowed.body["priority"]) == (200, 100)


def test_the_owner_cannot_jump_the_queue_but_an_admin_session_can(
    api: ApiGateway, access_rules: StaticAccessRules
) -> None:
    with_rules(access_rules)
    api.add(training_request("urgent", priority=50), caller=BOB)

    assert api.set_priority("urgent", 1_000_000, caller=BOB).status == 403
    reply = api.set_priority("urgent", 1_000_000, caller=OPERATOR_SESSION)

    assert (reply.status, reply.body["priority"]) == (200, 1_000_000)


def test_an_admin_configured_as_a_role_acts_through_any_session_of_it(api: ApiGateway) -> None:
    api.add(training_request("alices", priority=1))

    raised = api.set_priority("alices", 9, caller=OPERATOR_SESSION)
    cancelled = api.cancel("alices", caller=f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator/i-0abc1234")

    assert (raised.status, raised.body["priority"]) == (200, 9)
    assert (cancelled.status, cancelled.body["state"]) == (202, "cancelled")


def test_another_session_of_a_shared_role_is_another_owner_by_default(api: ApiGateway) -> None:
    api.add(training_request("alices"), caller=SSO_ALICE)

    assert api.cancel("alices", caller=SSO_BOB).status == 403
    assert api.cancel("alices", caller=SSO_ALICE).status == 202


def test_a_rule_can_make_every_session_of_a_role_one_owner(api: ApiGateway, access_rules: StaticAccessRules) -> None:
    document = {
        "rules": [{"name": "pipelines", "principals": [f"arn:aws:iam::{ACCOUNT}:role/*-pipeline"], "owner": "role"}]
    }
    with_rules(access_rules, document)
    api.add(training_request("nightly"), caller=PIPELINE)

    changed = api.set_priority("nightly", 3, caller=PIPELINE_NEXT_RUN)
    stranger = api.cancel("nightly", caller=SSO_BOB)

    assert (changed.status, changed.body["owner"]) == (200, PIPELINE)
    assert stranger.status == 403


def test_the_history_shows_who_changed_the_priority(api: ApiGateway) -> None:
    api.add(training_request("steered", priority=1))
    api.set_priority("steered", 2)
    api.set_priority("steered", 2)
    api.set_priority("steered", 7, caller=OPERATOR_SESSION)

    history = api.get("steered").body["history"]

    assert [(change["by"], change["what"]) for change in history] == [
        (ALICE, "priority 1 → 2"),
        (OPERATOR_SESSION, "priority 2 → 7"),
    ]
    assert all(change["at"].endswith("Z") for change in history)


def test_a_new_job_has_no_history(api: ApiGateway) -> None:
    assert api.add(training_request("fresh")).body["history"] == []


def test_while_the_rules_are_invalid_only_admins_raise_priorities(
    api: ApiGateway, access_rules: StaticAccessRules
) -> None:
    access_rules.rules = FALLBACK

    plain = api.add(training_request("plain"), caller=BOB)
    raised = api.add(training_request("raised", priority=1), caller=BOB)
    admin = api.add(training_request("ops", priority=1), caller=OPERATOR_SESSION)

    assert (plain.status, raised.status, admin.status) == (202, 403, 202)
    assert "fallback-while-rules-are-invalid" in raised.body["message"]
