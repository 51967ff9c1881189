"""The governance part of the template: the policy parameter built from the stack parameters, the
policy and idle topics with their optional emails, the idle-stop function subscribed to the idle
topic, and who may read, publish and touch the idle alarms."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from smq.local.template import evaluate
from smq_lambda.governance.idle import AlarmPrefix
from smq_lambda.governance.policy import Policy, parse_policy

from tests.template.template_support import REQUIRED_PARAMETERS
from tests.template.test_template_policies import (
    ACCOUNT,
    TABLE_ARN,
    TRAINING_JOBS,
    as_list,
    function_role,
    granted,
    resolve,
    resources,
    value,
)

IDLE_ALARMS = f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:smq-idle-smq.*"
"""The only alarms the functions of a stack named `smq` may touch: those named with its prefix."""
IDLE_FUNCTIONS = ("SchedulerFunction", "IdleStopFunction")


def policy_from(translated: dict[str, Any], **parameters: str) -> Policy:
    document = value(translated, translated["Resources"]["PolicyParameter"]["Properties"]["Value"], **parameters)
    return parse_policy(json.loads(document))


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        ({}, Policy()),
        ({"RequiredTags": "project"}, Policy(required_tags=("project",))),
        (
            {"RequiredTags": "project,cost-center", "AllowedInstanceTypes": "ml.g5.xlarge,ml.p5.48xlarge"},
            Policy(required_tags=("project", "cost-center"), allowed_instance_types=("ml.g5.xlarge", "ml.p5.48xlarge")),
        ),
        (
            {"MaxInstanceCount": "8", "MaxRuntimeSeconds": "86400", "SpotInterruptionLimit": "5"},
            Policy(max_instance_count=8, max_runtime_seconds=86400, spot_interruption_limit=5),
        ),
    ],
)
def test_the_policy_parameter_is_the_policy_the_stack_parameters_describe(
    translated: dict[str, Any], parameters: dict[str, str], expected: Policy
) -> None:
    assert policy_from(translated, **parameters) == expected


def test_idle_and_retry_numbers_reach_the_policy(translated: dict[str, Any]) -> None:
    policy = policy_from(
        translated, IdleThresholdPercent="5", IdlePeriodSeconds="60", IdleEvaluationPeriods="10", FailureMaxRetries="0"
    )
    assert (policy.idle.threshold_percent, policy.idle.period_seconds, policy.idle.evaluation_periods) == (5, 60, 10)
    assert policy.retry.max_retries == 0


@pytest.mark.parametrize(
    ("parameter", "text", "accepted"),
    [
        ("MaxInstanceCount", "null", True),
        ("MaxInstanceCount", "4", True),
        ("MaxInstanceCount", "0", False),
        ("MaxInstanceCount", "4}", False),
        ("MaxRuntimeSeconds", "86400", True),
        ("MaxRuntimeSeconds", "-1", False),
        ("RequiredTags", "project", True),
        ("RequiredTags", 'a", "b', False),
        ("AllowedInstanceTypes", "ml.g5.xlarge", True),
        ("AllowedInstanceTypes", 'ml.g5.xlarge"]', False),
        ("PolicyEmail", "", True),
        ("PolicyEmail", "team@example.com", True),
        ("PolicyEmail", "a@b.com,c@d.com", False),
        ("IdleEmail", "", True),
        ("IdleEmail", "team@example.com", True),
        ("IdleEmail", "a@b.com,c@d.com", False),
    ],
)
def test_parameters_that_could_break_the_json_are_refused(
    template: dict[str, Any], parameter: str, text: str, accepted: bool
) -> None:
    """CloudFormation checks AllowedPattern on each item of a list parameter."""
    pattern = template["Parameters"][parameter]["AllowedPattern"]
    assert (re.fullmatch(pattern, text) is not None) is accepted


def test_the_scheduler_and_idle_stop_publish_only_to_the_notifications_topic(translated: dict[str, Any]) -> None:
    for function in ("SchedulerFunction", "IdleStopFunction"):
        grants = granted(translated, function_role(translated, function))
        assert {action: arns for action, arns in grants.items() if action.startswith("sns:")} == {
            "sns:Publish": {"physical-PolicyTopic"}
        }, function
    assert not [action for action in granted(translated, function_role(translated, "ApiFunction")) if "sns:" in action]


def test_every_function_reads_the_policy_parameter_and_its_history(translated: dict[str, Any]) -> None:
    name = value(translated, {"Ref": "PolicyParameter"})
    assert name == "/smq/smq/policy"
    for function in ("ApiFunction", "SchedulerFunction", "IdleStopFunction"):
        grants = granted(translated, function_role(translated, function))
        for action in ("ssm:GetParameter", "ssm:GetParameterHistory"):
            assert f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter{name}" in grants[action], (function, action)


def test_every_function_falls_back_to_the_policy_the_stack_wrote(translated: dict[str, Any]) -> None:
    """SMQ_STACK_POLICY is the policy parameter's value as the stack wrote it (Fn::GetAtt), so it is
    the policy the Governance parameters describe, with no second copy of the document to drift."""
    for function in ("ApiFunction", "SchedulerFunction", "IdleStopFunction"):
        variables = translated["Resources"][function]["Properties"]["Environment"]["Variables"]
        assert variables["SMQ_STACK_POLICY"] == {"Fn::GetAtt": ["PolicyParameter", "Value"]}, function


@pytest.mark.parametrize(("email", "subscribed"), [("", False), ("team@example.com", True)])
@pytest.mark.parametrize(
    ("subscription_id", "parameter", "topic"),
    [
        ("PolicyEmailSubscription", "PolicyEmail", "PolicyTopic"),
        ("IdleEmailSubscription", "IdleEmail", "IdleAlarmTopic"),
    ],
)
def test_each_topic_email_is_subscribed_only_when_given(
    translated: dict[str, Any], subscription_id: str, parameter: str, topic: str, email: str, subscribed: bool
) -> None:
    subscription = resources(translated, "AWS::SNS::Subscription")[subscription_id]
    condition = translated["Conditions"][subscription["Condition"]]
    assert value(translated, condition, **{parameter: email}) is subscribed
    properties = value(translated, subscription["Properties"], **{parameter: email})
    # The policy email keeps hearing of the policy's stops only, not of every owner's notice.
    stops_only = {"FilterPolicy": {"action": ["policy-stop", "idle-stop"]}} if topic == "PolicyTopic" else {}
    assert properties == {"TopicArn": f"physical-{topic}", "Protocol": "email", "Endpoint": email, **stops_only}


def test_the_idle_stop_function_is_subscribed_to_the_idle_topic(translated: dict[str, Any]) -> None:
    function = translated["Resources"]["IdleStopFunction"]["Properties"]
    assert function["Handler"] == "smq_lambda.handlers.idle.handler"
    lambda_subscriptions = [
        subscription["Properties"]
        for subscription in resources(translated, "AWS::SNS::Subscription").values()
        if subscription["Properties"]["Protocol"] == "lambda"
    ]
    assert lambda_subscriptions == [
        {
            "Protocol": "lambda",
            "TopicArn": {"Ref": "IdleAlarmTopic"},
            "Endpoint": {"Fn::GetAtt": ["IdleStopFunction", "Arn"]},
        }
    ]
    invokers = [
        permission["Properties"]
        for permission in resources(translated, "AWS::Lambda::Permission").values()
        if permission["Properties"]["FunctionName"] == {"Ref": "IdleStopFunction"}
    ]
    assert invokers == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Ref": "IdleStopFunction"},
            "Principal": "sns.amazonaws.com",
            "SourceArn": {"Ref": "IdleAlarmTopic"},
        }
    ]


def test_a_notification_the_idle_stop_function_fails_three_times_lands_in_its_dead_letter_queue(
    translated: dict[str, Any],
) -> None:
    """Reconciliation then stops the idle job (the alarm stays in ALARM); the queue's alarm tells
    ops (test_template_ops.py)."""
    (config,) = [
        config["Properties"]
        for config in resources(translated, "AWS::Lambda::EventInvokeConfig").values()
        if config["Properties"]["FunctionName"] == {"Ref": "IdleStopFunction"}
    ]
    assert config["MaximumRetryAttempts"] == 2
    assert config["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": ["IdleStopDeadLetterQueue", "Arn"]}
    assert translated["Resources"]["IdleStopDeadLetterQueue"]["Type"] == "AWS::SQS::Queue"
    grants = granted(translated, function_role(translated, "IdleStopFunction"))
    assert grants["sqs:SendMessage"] == {resolve("IdleStopDeadLetterQueue", "Arn")}


def test_the_scheduler_puts_alarms_that_notify_the_idle_topic(translated: dict[str, Any]) -> None:
    """Without SMQ_IDLE_TOPIC_ARN the scheduler puts no idle alarm at all (handlers/scheduler.py)."""
    variables = translated["Resources"]["SchedulerFunction"]["Properties"]["Environment"]["Variables"]
    assert value(translated, variables["SMQ_IDLE_TOPIC_ARN"]) == "physical-IdleAlarmTopic"


@pytest.mark.parametrize("stack", ["smq", "smq-2", "Team-B"])
def test_the_alarm_prefix_is_the_stacks_and_scopes_every_alarm_grant(translated: dict[str, Any], stack: str) -> None:
    """What the functions name their alarms with is what IAM and the idle topic admit, per stack,
    so two stacks in one account and Region never touch each other's alarms."""

    def deployed(node: Any) -> Any:
        return evaluate(
            translated,
            node,
            resolve,
            parameter_overrides=REQUIRED_PARAMETERS,
            pseudo_parameters={"AWS::StackName": stack},
        )

    variables = [
        translated["Resources"][function]["Properties"]["Environment"]["Variables"] for function in IDLE_FUNCTIONS
    ]
    prefixes = {deployed(environment["SMQ_IDLE_ALARM_PREFIX"]) for environment in variables}
    assert prefixes == {AlarmPrefix(f"smq-idle-{stack}.").value}
    alarms = f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:smq-idle-{stack}.*"
    alarm_statements = [
        statement
        for function in (*IDLE_FUNCTIONS, "ApiFunction")
        for policy in translated["Resources"][function_role(translated, function)]["Properties"].get("Policies", [])
        for statement in deployed(policy["PolicyDocument"])["Statement"]
        if any(action.startswith("cloudwatch:") for action in as_list(statement["Action"]))
    ]
    assert len(alarm_statements) == 2
    assert all(as_list(statement["Resource"]) == [alarms] for statement in alarm_statements)
    (topic_policy,) = resources(translated, "AWS::SNS::TopicPolicy").values()
    (statement,) = deployed(topic_policy["Properties"]["PolicyDocument"])["Statement"]
    assert statement["Condition"]["ArnLike"] == {"aws:SourceArn": alarms}


def test_idle_alarm_access_is_scoped_to_the_alarm_prefix(translated: dict[str, Any]) -> None:
    scheduler = granted(translated, function_role(translated, "SchedulerFunction"))
    idle_stop = granted(translated, function_role(translated, "IdleStopFunction"))
    api = granted(translated, function_role(translated, "ApiFunction"))
    assert {action: arns for action, arns in scheduler.items() if action.startswith("cloudwatch:")} == {
        "cloudwatch:PutMetricAlarm": {IDLE_ALARMS},
        "cloudwatch:DeleteAlarms": {IDLE_ALARMS},
        "cloudwatch:DescribeAlarms": {IDLE_ALARMS},
    }
    assert {action: arns for action, arns in idle_stop.items() if action.startswith("cloudwatch:")} == {
        "cloudwatch:DeleteAlarms": {IDLE_ALARMS},
        "cloudwatch:DescribeAlarms": {IDLE_ALARMS},
    }
    assert not [action for action in api if action.startswith("cloudwatch:")]


def test_the_idle_stop_function_may_do_only_what_stopping_an_idle_job_takes(translated: dict[str, Any]) -> None:
    """Find the job (the pool registry item, then a consistent batch read of the live jobs), write
    it `stopping` (or warned) with UpdateItem, alone or in a transaction with its pools' items,
    read the policy, stop the training job, read and delete its alarms, tell the owner, park a
    notification it failed on: nothing more (tests/template/test_function_permissions.py shows
    each of these is needed)."""
    policy = value(translated, {"Ref": "PolicyParameter"})
    assert granted(translated, function_role(translated, "IdleStopFunction")) == {
        "dynamodb:GetItem": {TABLE_ARN},
        "dynamodb:BatchGetItem": {TABLE_ARN},
        "dynamodb:UpdateItem": {TABLE_ARN},
        "ssm:GetParameter": {f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter{policy}"},
        "ssm:GetParameterHistory": {f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter{policy}"},
        "sagemaker:StopTrainingJob": {TRAINING_JOBS},
        "cloudwatch:DescribeAlarms": {IDLE_ALARMS},
        "cloudwatch:DeleteAlarms": {IDLE_ALARMS},
        "sns:Publish": {"physical-PolicyTopic"},
        "sqs:SendMessage": {resolve("IdleStopDeadLetterQueue", "Arn")},
    }


def test_only_this_accounts_idle_alarms_may_publish_to_the_idle_topic(translated: dict[str, Any]) -> None:
    (policy,) = resources(translated, "AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": "IdleAlarmTopic"}]
    (statement,) = value(translated, policy["Properties"]["PolicyDocument"])["Statement"]
    assert statement == {
        "Sid": "IdleAlarmsPublish",
        "Effect": "Allow",
        "Principal": {"Service": "cloudwatch.amazonaws.com"},
        "Action": "sns:Publish",
        "Resource": "physical-IdleAlarmTopic",
        "Condition": {
            "StringEquals": {"aws:SourceAccount": ACCOUNT},
            "ArnLike": {"aws:SourceArn": IDLE_ALARMS},
        },
    }


def test_governance_outputs(translated: dict[str, Any]) -> None:
    outputs = {name: value(translated, output["Value"]) for name, output in translated["Outputs"].items()}
    assert outputs["PolicyParameterName"] == value(translated, {"Ref": "PolicyParameter"})
    assert outputs["PolicyTopicArn"] == "physical-PolicyTopic"
