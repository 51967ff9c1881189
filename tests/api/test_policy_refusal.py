"""POST /add-job under the governance policy: a violating request is refused with 400 naming every
violation at once (the answer is checked against openapi.yaml by the gateway), and nothing is
written or kicked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.governance.policy import IdlePolicy, Policy
from smq_lambda.handlers.api import create_app, idempotency_store, lambda_handler
from smq_lambda.service.queue_api import QueueService
from smq_lambda.service.submission import SubmissionPolicy

from tests.api.builders import (
    ADMIN,
    ALICE,
    BOB,
    CHECKPOINT_PREFIX,
    G5,
    OTHER_ROLE,
    P5,
    ROLE,
    TABLE,
    training_request,
)
from tests.api.gateway import ApiGateway
from tests.support.fakes import FakeConfigSource, RecordingTrigger, StaticPolicySource


@pytest.fixture
def policy() -> SubmissionPolicy:
    """The deployment's AllowedRoleArns setting allows both roles; the policy may allow fewer."""
    return SubmissionPolicy(allowed_role_arns=frozenset({ROLE, OTHER_ROLE}), checkpoint_s3_prefix=CHECKPOINT_PREFIX)


@pytest.fixture
def policy_source() -> StaticPolicySource:
    return StaticPolicySource()


@pytest.fixture
def governed(
    store: DynamoJobStore,
    config: FakeConfigSource,
    trigger: RecordingTrigger,
    policy: SubmissionPolicy,
    policy_source: StaticPolicySource,
    dynamodb: Any,
) -> ApiGateway:
    service = QueueService(store, config, trigger, policy=policy, admin_principals={ADMIN}, governance=policy_source)
    app = create_app(service, idempotency_store(TABLE, dynamodb))
    return ApiGateway(lambda_handler(lambda: app))


STRICT = Policy(
    required_tags=("project", "cost-center"),
    allowed_instance_types=(G5,),
    max_instance_count=2,
    max_runtime_seconds=3600,
    allowed_role_arns=(ROLE,),
)


@pytest.mark.parametrize(
    ("request_members", "violations"),
    [
        ({}, [("Tags.project", "required_tags"), ("Tags.cost-center", "required_tags")]),
        (
            {"Tags": [{"Key": "project", "Value": "vit"}, {"Key": "cost-center", "Value": ""}]},
            [("Tags.cost-center", "required_tags")],
        ),
        (
            {
                "Tags": [{"Key": "project", "Value": "vit"}, {"Key": "cost-center", "Value": "42"}],
                "ResourceConfig": {"InstanceType": P5, "InstanceCount": 2, "VolumeSizeInGB": 30},
                "StoppingCondition": {"MaxRuntimeInSeconds": 7200},
                "RoleArn": OTHER_ROLE,
            },
            [
                ("ResourceConfig.InstanceType", "allowed_instance_types"),
                ("StoppingCondition.MaxRuntimeInSeconds", "max_runtime_seconds"),
                ("RoleArn", "allowed_role_arns"),
            ],
        ),
        (
            {
                "Tags": [{"Key": "project", "Value": "vit"}, {"Key": "cost-center", "Value": "42"}],
                "ResourceConfig": {"InstanceType": G5, "InstanceCount": 3, "VolumeSizeInGB": 30},
            },
            [("ResourceConfig.InstanceCount", "max_instance_count")],
        ),
    ],
)
def test_a_violating_request_is_refused_naming_every_violation(
    governed: ApiGateway,
    policy_source: StaticPolicySource,
    trigger: RecordingTrigger,
    dump_table: Callable[[], list[dict[str, Any]]],
    request_members: dict[str, Any],
    violations: list[tuple[str, str]],
) -> None:
    policy_source.policy = STRICT
    before = dump_table()

    reply = governed.add(training_request(**request_members))

    assert reply.status == 400, reply.body
    assert [(item["field"], item["rule"]) for item in reply.body["violations"]] == violations
    assert reply.field == violations[0][0]
    for item in reply.body["violations"]:
        assert item["message"].startswith(item["field"]) and item["message"] in reply.body["message"]
    assert dump_table() == before
    assert trigger.kicks == []


def test_a_compliant_request_is_queued(governed: ApiGateway, policy_source: StaticPolicySource) -> None:
    policy_source.policy = STRICT
    tags = [{"Key": "project", "Value": "vit"}, {"Key": "cost-center", "Value": "42"}]

    reply = governed.add(training_request(Tags=tags))

    assert reply.status == 202, reply.body
    assert "violations" not in reply.body


def test_the_policy_in_force_is_read_at_each_submission(
    governed: ApiGateway, policy_source: StaticPolicySource
) -> None:
    assert governed.add(training_request("first")).status == 202
    policy_source.policy = Policy(required_tags=("project",))

    reply = governed.add(training_request("second"))

    assert (reply.status, reply.field) == (400, "Tags.project")


def test_an_admin_is_bound_by_the_policy_too(governed: ApiGateway, policy_source: StaticPolicySource) -> None:
    """The policy guards the bill, not who may do what: no principal is above it."""
    policy_source.policy = Policy(required_tags=("project",))

    reply = governed.add(training_request(), caller=ADMIN)

    assert (reply.status, reply.field) == (400, "Tags.project")


def test_a_shape_error_comes_first_and_alone(governed: ApiGateway, policy_source: StaticPolicySource) -> None:
    """A request SageMaker would refuse is fixed first; the policy's list is about valid requests."""
    policy_source.policy = STRICT

    reply = governed.add(training_request(TrainingJobName="bad_name"))

    assert (reply.status, reply.field) == (400, "TrainingJobName")
    assert "violations" not in reply.body


EXEMPT = [{"Key": "smq:idle-exempt", "Value": "true"}]


@pytest.mark.parametrize(
    ("tags", "caller", "status", "field"),
    [
        (EXEMPT, ALICE, 202, None),
        (EXEMPT, BOB, 403, "Tags.smq:idle-exempt"),
        (EXEMPT, ADMIN, 403, "Tags.smq:idle-exempt"),
        ([{"Key": "smq:idle-exempt", "Value": "yes"}], ALICE, 400, "Tags.smq:idle-exempt"),
    ],
)
def test_only_principals_the_policy_names_may_exempt_a_job_from_the_idle_stop(
    governed: ApiGateway,
    policy_source: StaticPolicySource,
    dump_table: Callable[[], list[dict[str, Any]]],
    tags: list[dict[str, str]],
    caller: str,
    status: int,
    field: str | None,
) -> None:
    policy_source.policy = Policy(idle=IdlePolicy(exempt_principals=(ALICE,)))
    before = dump_table()

    reply = governed.add(training_request(Tags=tags), caller=caller)

    assert reply.status == status, reply.body
    if field is not None:
        assert reply.field == field
        assert "smq:idle-exempt" in reply.body["message"]
        assert dump_table() == before


def test_without_a_policy_nobody_may_exempt_a_job(
    store: DynamoJobStore, config: FakeConfigSource, trigger: RecordingTrigger, policy: SubmissionPolicy, dynamodb: Any
) -> None:
    service = QueueService(store, config, trigger, policy=policy, admin_principals={ADMIN})
    ungoverned = ApiGateway(lambda_handler(lambda: create_app(service, idempotency_store(TABLE, dynamodb))))

    reply = ungoverned.add(training_request(Tags=EXEMPT))

    assert (reply.status, reply.field) == (403, "Tags.smq:idle-exempt")
