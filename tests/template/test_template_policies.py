"""The stack as CloudFormation deploys it (after the SAM transform): least privilege, the
scheduler's single-pass guarantee, its event sources and dead-letter queues, the API's auth."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from smq.local.template import evaluate

from tests.template.template_support import ALLOWED_ROLES, REQUIRED_PARAMETERS

ACCOUNT = "123456789012"
TABLE_ARN = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/smq-QueueTable"
TRAINING_JOBS = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/*"
# Actions that support no resource-level scoping, so they may only appear with Resource "*".
UNSCOPABLE = {"sagemaker:ListTrainingJobs", "pricing:GetProducts"}
SAGEMAKER_ACTIONS = {
    "sagemaker:CreateTrainingJob",
    "sagemaker:DescribeTrainingJob",
    "sagemaker:StopTrainingJob",
    "sagemaker:UpdateTrainingJob",
    "sagemaker:ListTrainingJobs",
    "sagemaker:AddTags",
    "sagemaker:ListTags",
}
TABLE_ACTIONS = {
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:Query",
}


def resolve(logical_id: str, attribute: str | None) -> str:
    """Physical values for the translated stack's resources, shaped like CloudFormation's."""
    if logical_id == "QueueTable":
        return TABLE_ARN if attribute == "Arn" else "smq-QueueTable"
    if attribute == "Arn":
        return f"arn:aws:service:us-east-1:{ACCOUNT}:{logical_id}"
    return f"physical-{logical_id}"


def value(template: dict[str, Any], node: Any, **parameters: str) -> Any:
    return evaluate(template, node, resolve, parameter_overrides={**REQUIRED_PARAMETERS, **parameters})


def resources(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == resource_type
    }


def as_list(item: Any) -> list[Any]:
    return item if isinstance(item, list) else [item]


def statements(template: dict[str, Any], role: str) -> Iterator[dict[str, Any]]:
    """Every statement of a role's inline policies, evaluated."""
    for policy in template["Resources"][role]["Properties"].get("Policies", []):
        yield from value(template, policy["PolicyDocument"])["Statement"]


def granted(template: dict[str, Any], role: str) -> dict[str, set[str]]:
    """action -> resources it is allowed on, for a role's inline policies."""
    grants: dict[str, set[str]] = {}
    for statement in statements(template, role):
        assert statement["Effect"] == "Allow"
        for action in as_list(statement["Action"]):
            grants.setdefault(action, set()).update(as_list(statement["Resource"]))
    return grants


def function_role(template: dict[str, Any], function: str) -> str:
    role = template["Resources"][function]["Properties"]["Role"]
    return role["Fn::GetAtt"][0]


def test_no_full_access_or_wildcard_grants(translated: dict[str, Any]) -> None:
    for role_id, role in resources(translated, "AWS::IAM::Role").items():
        for arn in role["Properties"].get("ManagedPolicyArns", []):
            assert "FullAccess" not in str(value(translated, arn)), role_id
        for statement in statements(translated, role_id):
            for action in as_list(statement["Action"]):
                assert "*" not in action, (role_id, action)
            if "*" in as_list(statement["Resource"]):
                assert set(as_list(statement["Action"])) <= UNSCOPABLE, (role_id, statement)
    assert not resources(translated, "AWS::IAM::ManagedPolicy")
    assert not resources(translated, "AWS::IAM::Policy")


def test_pass_role_only_for_allowed_roles_and_only_to_sagemaker(translated: dict[str, Any]) -> None:
    pass_role_statements = [
        (role_id, statement)
        for role_id in resources(translated, "AWS::IAM::Role")
        for statement in statements(translated, role_id)
        if any(action.lower().startswith("iam:") for action in as_list(statement["Action"]))
    ]
    assert [role_id for role_id, _ in pass_role_statements] == [function_role(translated, "SchedulerFunction")]
    for _, statement in pass_role_statements:
        assert as_list(statement["Action"]) == ["iam:PassRole"]
        assert as_list(statement["Resource"]) == list(ALLOWED_ROLES)
        assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}


def test_sagemaker_actions_limited_to_training_jobs(translated: dict[str, Any]) -> None:
    grants = granted(translated, function_role(translated, "SchedulerFunction"))
    sagemaker = {action: arns for action, arns in grants.items() if action.startswith("sagemaker:")}
    assert set(sagemaker) == SAGEMAKER_ACTIONS
    for action, arns in sagemaker.items():
        assert arns == ({"*"} if action in UNSCOPABLE else {TRAINING_JOBS}), action


def test_api_function_never_touches_sagemaker_and_cannot_pass_roles(translated: dict[str, Any]) -> None:
    """GET /pools reads what the last pass measured, so the API needs no SageMaker access at all;
    it asks for a pass with a message on the scheduler queue, and may do nothing else with SQS."""
    grants = granted(translated, function_role(translated, "ApiFunction"))
    assert {action.split(":")[0] for action in grants} == {"dynamodb", "ssm", "sqs"}
    assert {action: arns for action, arns in grants.items() if action.startswith("sqs:")} == {
        "sqs:SendMessage": {resolve("SchedulerQueue", "Arn")}
    }


@pytest.mark.parametrize("function", ["ApiFunction", "SchedulerFunction"])
def test_table_and_parameter_access_is_scoped(translated: dict[str, Any], function: str) -> None:
    grants = granted(translated, function_role(translated, function))
    table = {action: arns for action, arns in grants.items() if action.startswith("dynamodb:")}
    # Replay records (the API) and listing items (pending_listing.py) are deleted by key.
    deletes = {"dynamodb:DeleteItem": {TABLE_ARN}}
    assert {action: arns for action, arns in table.items() if action not in TABLE_ACTIONS} == deletes
    assert set(table) - set(deletes) == TABLE_ACTIONS  # no Scan: nothing scans the queue table
    for action in TABLE_ACTIONS:
        assert table[action] == {TABLE_ARN, f"{TABLE_ARN}/index/*"}
    readable = ["PoolsParameter", "PolicyParameter"]
    readable += ["AccessRulesParameter"] if function == "ApiFunction" else []
    parameters = {value(translated, {"Ref": name}) for name in readable}
    ssm = {action: arns for action, arns in grants.items() if action.startswith("ssm:")}
    arns = {f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter{name}" for name in parameters}
    # The history: a broken value is replaced by the newest valid version (adapters/ssm_document.py).
    assert ssm == {"ssm:GetParameter": arns, "ssm:GetParameterHistory": arns}


def test_scheduler_concurrency_admits_its_queue_and_schedule_and_failed_ticks_land_in_a_queue(
    translated: dict[str, Any],
) -> None:
    """Passes never overlap whatever the concurrency (the pass lease); the reserved concurrency
    leaves room for the queue's pollers and the reconciliation tick, so no batch is throttled."""
    scheduler = translated["Resources"]["SchedulerFunction"]["Properties"]
    (mapping,) = resources(translated, "AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"]["FunctionName"] == {"Ref": "SchedulerFunction"}
    assert scheduler["ReservedConcurrentExecutions"] >= mapping["Properties"]["ScalingConfig"]["MaximumConcurrency"] + 1
    (config,) = [
        config
        for config in resources(translated, "AWS::Lambda::EventInvokeConfig").values()
        if config["Properties"]["FunctionName"] == {"Ref": "SchedulerFunction"}
    ]
    on_failure = config["Properties"]["DestinationConfig"]["OnFailure"]["Destination"]
    queue = on_failure["Fn::GetAtt"][0]
    assert translated["Resources"][queue]["Type"] == "AWS::SQS::Queue"
    grants = granted(translated, function_role(translated, "SchedulerFunction"))
    assert grants["sqs:SendMessage"] == {resolve(queue, "Arn")}


PRICE_REFRESH_RULE = "PriceRefreshFunctionDaily"
"""The one rule that does not feed the scheduler: the daily price refresh's schedule."""


def scheduler_rules(translated: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The rules that feed the scheduler: straight to the function, or through its queue."""
    feeds = ({"Fn::GetAtt": ["SchedulerFunction", "Arn"]}, {"Fn::GetAtt": ["SchedulerQueue", "Arn"]})
    rules = {}
    for logical_id, rule in resources(translated, "AWS::Events::Rule").items():
        if logical_id == PRICE_REFRESH_RULE:
            continue
        (target,) = rule["Properties"]["Targets"]
        assert target["Arn"] in feeds, logical_id
        rules[logical_id] = rule["Properties"]
    return rules


@pytest.mark.parametrize(("refresh", "state"), [("true", "ENABLED"), ("false", "DISABLED")])
def test_prices_refresh_daily_unless_the_parameter_turns_it_off(
    translated: dict[str, Any], refresh: str, state: str
) -> None:
    rule = translated["Resources"][PRICE_REFRESH_RULE]["Properties"]
    (target,) = rule["Targets"]
    assert rule["ScheduleExpression"] == "rate(1 day)"
    assert target["Arn"] == {"Fn::GetAtt": ["PriceRefreshFunction", "Arn"]}
    assert value(translated, rule["State"], PriceListRefresh=refresh) == state


def test_the_price_refresh_writes_only_the_table_and_reads_only_the_price_list(translated: dict[str, Any]) -> None:
    grants = granted(translated, function_role(translated, "PriceRefreshFunction"))
    grants = {action: resources_ for action, resources_ in grants.items() if not action.startswith("logs:")}
    assert grants == {
        "dynamodb:PutItem": {TABLE_ARN},
        "pricing:GetProducts": {"*"},
        "sqs:SendMessage": {resolve("PriceRefreshDeadLetterQueue", "Arn")},
    }


def test_scheduler_runs_on_every_sagemaker_training_job_state_change(translated: dict[str, Any]) -> None:
    patterns = [rule["EventPattern"] for rule in scheduler_rules(translated).values() if "EventPattern" in rule]
    assert patterns == [{"source": ["aws.sagemaker"], "detail-type": ["SageMaker Training Job State Change"]}]


def test_scheduler_reconciles_every_five_minutes(translated: dict[str, Any]) -> None:
    schedules = [
        rule["ScheduleExpression"] for rule in scheduler_rules(translated).values() if "ScheduleExpression" in rule
    ]
    assert schedules == ["rate(5 minutes)"]


def test_undeliverable_events_land_in_a_queue_that_admits_only_the_rules(translated: dict[str, Any]) -> None:
    rules = scheduler_rules(translated)
    policies = resources(translated, "AWS::SQS::QueuePolicy").values()
    for logical_id, rule in rules.items():
        (target,) = rule["Targets"]
        queue = target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
        assert translated["Resources"][queue]["Type"] == "AWS::SQS::Queue"
        admitted = [
            statement
            for policy in policies
            if {"Ref": queue} in policy["Properties"]["Queues"]
            for statement in value(translated, policy["Properties"]["PolicyDocument"])["Statement"]
        ]
        assert any(
            statement["Principal"] == {"Service": "events.amazonaws.com"}
            and resolve(logical_id, "Arn") in as_list(statement["Condition"]["ArnEquals"]["aws:SourceArn"])
            for statement in admitted
        ), logical_id
    assert all(
        resource["Properties"].get("SqsManagedSseEnabled") is True
        for resource in resources(translated, "AWS::SQS::Queue").values()
    )


def test_every_api_method_uses_iam_auth_and_the_api_function(translated: dict[str, Any]) -> None:
    (api,) = resources(translated, "AWS::ApiGateway::RestApi").values()
    body = api["Properties"]["Body"]
    assert api["Properties"]["Name"] == "training-job-queue"
    scheme = body["components"]["securitySchemes"]["sigv4"]
    assert scheme["x-amazon-apigateway-authtype"] == "awsSigv4"
    integration_uri = value(
        translated,
        {"Fn::Sub": "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/${ApiFunction.Arn}/invocations"},
    )
    for path, item in body["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert operation["security"] == [{"sigv4": []}], (path, method)
            integration = operation["x-amazon-apigateway-integration"]
            assert (integration["type"], integration["httpMethod"]) == ("aws_proxy", "POST")
            assert value(translated, integration["uri"]) == integration_uri
    (stage,) = resources(translated, "AWS::ApiGateway::Stage").values()
    assert stage["Properties"]["StageName"] == "prod"
    permissions = [
        permission["Properties"]
        for permission in resources(translated, "AWS::Lambda::Permission").values()
        if permission["Properties"]["FunctionName"] == {"Ref": "ApiFunction"}
    ]
    assert [(p["Principal"], value(translated, p["SourceArn"])) for p in permissions] == [
        ("apigateway.amazonaws.com", f"arn:aws:execute-api:us-east-1:{ACCOUNT}:physical-Api/prod/*")
    ]


def test_regional_api_has_no_resource_policy(translated: dict[str, Any]) -> None:
    (api,) = resources(translated, "AWS::ApiGateway::RestApi").values()
    properties = value(translated, {key: api["Properties"][key] for key in ("Policy", "EndpointConfiguration")})
    assert properties == {"EndpointConfiguration": {"Types": ["REGIONAL"]}}


def test_private_api_admits_only_its_vpc_endpoints(translate_template: Any) -> None:
    endpoints = "vpce-0123456789abcdef0,vpce-0fedcba9876543210"
    parameters = {**REQUIRED_PARAMETERS, "EndpointType": "PRIVATE", "VpcEndpointIds": endpoints}
    translated = translate_template(parameters)
    (api,) = resources(translated, "AWS::ApiGateway::RestApi").values()
    properties = value(translated, api["Properties"], **parameters)
    assert properties["EndpointConfiguration"] == {"Types": ["PRIVATE"], "VpcEndpointIds": endpoints.split(",")}
    by_effect = {statement["Effect"]: statement for statement in properties["Policy"]["Statement"]}
    assert by_effect["Deny"]["Principal"] == "*"
    assert by_effect["Deny"]["Condition"] == {"StringNotEquals": {"aws:SourceVpce": endpoints.split(",")}}
    assert by_effect["Allow"]["Principal"] == {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}
    for statement in by_effect.values():
        assert (statement["Action"], statement["Resource"]) == ("execute-api:Invoke", "execute-api:/*")


@pytest.mark.parametrize(
    ("endpoint_type", "endpoints", "accepted"),
    [("PRIVATE", "", False), ("PRIVATE", "vpce-0123456789abcdef0", True), ("REGIONAL", "", True)],
)
def test_a_private_api_cannot_be_deployed_without_endpoints(
    translated: dict[str, Any], endpoint_type: str, endpoints: str, accepted: bool
) -> None:
    parameters = {"EndpointType": endpoint_type, "VpcEndpointIds": endpoints}
    outcomes = [
        all(value(translated, assertion["Assert"], **parameters) for assertion in rule["Assertions"])
        for rule in translated["Rules"].values()
        if value(translated, rule["RuleCondition"], **parameters)
    ]
    assert all(outcomes) is accepted


def test_outputs(translated: dict[str, Any]) -> None:
    outputs = {name: value(translated, output["Value"]) for name, output in translated["Outputs"].items()}
    assert outputs["ApiUrl"] == "https://physical-Api.execute-api.us-east-1.amazonaws.com/prod"
    assert outputs["QueueTableName"] == "smq-QueueTable"
    assert outputs["PoolsParameterName"] == value(translated, {"Ref": "PoolsParameter"})
    assert outputs["SchedulerFunctionName"] == "physical-SchedulerFunction"
    assert outputs["IdleAlarmTopicArn"] == "physical-IdleAlarmTopic"
    assert translated["Resources"]["IdleAlarmTopic"]["Type"] == "AWS::SNS::Topic"
