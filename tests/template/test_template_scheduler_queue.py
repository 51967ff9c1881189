"""The scheduler's input queue (after the SAM transform): SageMaker state changes reach it through
one rule that alone may send to it, the API kicks through it, the scheduler consumes it in batches
from one event source mapping with partial batch responses, and what keeps failing is parked in a
dead-letter queue that alarms. The reconciliation schedule still invokes the scheduler directly."""

from __future__ import annotations

from typing import Any

import pytest

from tests.template.template_support import REQUIRED_PARAMETERS
from tests.template.test_template_policies import as_list, function_role, granted, resolve, resources, value

QUEUE = {"Fn::GetAtt": ["SchedulerQueue", "Arn"]}


def queue(translated: dict[str, Any], logical_id: str = "SchedulerQueue") -> dict[str, Any]:
    resource = translated["Resources"][logical_id]
    assert resource["Type"] == "AWS::SQS::Queue"
    return value(translated, resource["Properties"])


def mapping(translated: dict[str, Any]) -> dict[str, Any]:
    (source,) = resources(translated, "AWS::Lambda::EventSourceMapping").values()
    return source["Properties"]


def test_the_queue_is_encrypted_and_parks_what_keeps_failing(translated: dict[str, Any]) -> None:
    properties = queue(translated)
    timeout = translated["Resources"]["SchedulerFunction"]["Properties"]["Timeout"]
    assert properties["SqsManagedSseEnabled"] is True
    # AWS: at least six times the function's timeout for a Lambda event source.
    assert int(properties["VisibilityTimeout"]) >= 6 * int(timeout)
    redrive = properties["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == resolve("SchedulerQueueDeadLetterQueue", "Arn")
    assert int(redrive["maxReceiveCount"]) >= 5  # throttled receives count too
    dead_letters = queue(translated, "SchedulerQueueDeadLetterQueue")
    assert dead_letters["SqsManagedSseEnabled"] is True
    # A message moved to a dead-letter queue keeps its first enqueue time.
    assert int(dead_letters["MessageRetentionPeriod"]) > int(properties["MessageRetentionPeriod"])


def test_sagemaker_state_changes_reach_the_queue_through_one_rule(translated: dict[str, Any]) -> None:
    rules = {
        logical_id: rule["Properties"]
        for logical_id, rule in resources(translated, "AWS::Events::Rule").items()
        if rule["Properties"]["Targets"][0]["Arn"] == QUEUE
    }
    assert list(rules) == ["SageMakerStateChangeRule"]
    rule = rules["SageMakerStateChangeRule"]
    assert rule["EventPattern"] == {"source": ["aws.sagemaker"], "detail-type": ["SageMaker Training Job State Change"]}
    assert rule.get("State", "ENABLED") == "ENABLED"
    (target,) = rule["Targets"]
    assert "InputTransformer" not in target and "Input" not in target  # the body is the event itself
    assert target["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": ["EventDeliveryDeadLetterQueue", "Arn"]}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1


def test_only_that_rule_may_send_to_the_queue(translated: dict[str, Any]) -> None:
    policies = [
        policy["Properties"]
        for policy in resources(translated, "AWS::SQS::QueuePolicy").values()
        if {"Ref": "SchedulerQueue"} in policy["Properties"]["Queues"]
    ]
    assert len(policies) == 1 and policies[0]["Queues"] == [{"Ref": "SchedulerQueue"}]
    (statement,) = value(translated, policies[0]["PolicyDocument"])["Statement"]
    assert statement == {
        "Effect": "Allow",
        "Principal": {"Service": "events.amazonaws.com"},
        "Action": "sqs:SendMessage",
        "Resource": resolve("SchedulerQueue", "Arn"),
        "Condition": {"ArnEquals": {"aws:SourceArn": resolve("SageMakerStateChangeRule", "Arn")}},
    }


def test_the_scheduler_consumes_the_queue_in_batches_with_partial_failures(translated: dict[str, Any]) -> None:
    properties = mapping(translated)
    assert properties["EventSourceArn"] == QUEUE
    assert properties["FunctionName"] == {"Ref": "SchedulerFunction"}
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert properties["ScalingConfig"] == {"MaximumConcurrency": 2}
    assert value(translated, properties["BatchSize"]) == "100"
    assert value(translated, properties["MaximumBatchingWindowInSeconds"]) == "1"
    overridden = {"SchedulerBatchSize": "500", "SchedulerBatchingWindowSeconds": "20"}
    assert value(translated, properties["BatchSize"], **overridden) == "500"
    assert value(translated, properties["MaximumBatchingWindowInSeconds"], **overridden) == "20"


@pytest.mark.parametrize(
    ("batch_size", "window", "accepted"),
    [("10", "0", True), ("11", "0", False), ("10000", "1", True), ("1", "0", True)],
)
def test_a_batch_above_ten_needs_a_batching_window(
    translated: dict[str, Any], batch_size: str, window: str, accepted: bool
) -> None:
    parameters = {"SchedulerBatchSize": batch_size, "SchedulerBatchingWindowSeconds": window}
    rule = translated["Rules"]["BigSchedulerBatchesNeedABatchingWindow"]
    applies = value(translated, rule["RuleCondition"], **parameters)
    holds = all(value(translated, assertion["Assert"], **parameters) for assertion in rule["Assertions"])
    assert (not applies or holds) is accepted


def test_the_scheduler_may_only_receive_and_delete_from_its_own_queue(translated: dict[str, Any]) -> None:
    role = function_role(translated, "SchedulerFunction")
    grants = granted(translated, role)
    consuming = {
        action: arns for action, arns in grants.items() if action.startswith("sqs:") and action != "sqs:SendMessage"
    }
    assert consuming == {
        "sqs:ReceiveMessage": {resolve("SchedulerQueue", "Arn")},
        "sqs:DeleteMessage": {resolve("SchedulerQueue", "Arn")},
        "sqs:GetQueueAttributes": {resolve("SchedulerQueue", "Arn")},
    }
    # Not SAM's `Type: SQS` event: its AWSLambdaSQSQueueExecutionRole grants them on every queue.
    managed = [str(arn) for arn in translated["Resources"][role]["Properties"].get("ManagedPolicyArns", [])]
    assert not [arn for arn in managed if "SQS" in arn]


def test_the_api_kicks_through_the_queue(template: dict[str, Any], translated: dict[str, Any]) -> None:
    from smq.local.template import function_environment

    environment = function_environment(template, "ApiFunction", resolve, parameter_overrides=REQUIRED_PARAMETERS)
    assert environment["SMQ_SCHEDULER_QUEUE_URL"] == resolve("SchedulerQueue", None)
    grants = granted(translated, function_role(translated, "ApiFunction"))
    assert not [action for action in grants if action.startswith("lambda:")]


def test_reconciliation_still_invokes_the_scheduler_directly(translated: dict[str, Any]) -> None:
    direct = [
        rule["Properties"]
        for rule in resources(translated, "AWS::Events::Rule").values()
        if rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": ["SchedulerFunction", "Arn"]}
    ]
    assert [rule.get("ScheduleExpression") for rule in direct] == ["rate(5 minutes)"]


def test_the_dead_letter_queue_of_the_scheduler_queue_alarms(translated: dict[str, Any]) -> None:
    alarm = translated["Resources"]["SchedulerQueueDeadLetterAlarm"]["Properties"]
    assert {d["Name"]: d["Value"] for d in alarm["Dimensions"]} == {
        "QueueName": {"Fn::GetAtt": ["SchedulerQueueDeadLetterQueue", "QueueName"]}
    }
    assert (alarm["MetricName"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
        "ApproximateNumberOfMessagesVisible",
        0,
        "GreaterThanThreshold",
    )
    assert as_list(alarm["AlarmActions"]) == [{"Ref": "OpsTopic"}]


@pytest.mark.parametrize(
    ("tracing", "mode", "disabled", "api"),
    [("Disabled", "PassThrough", "true", False), ("Active", "Active", "false", True)],
)
def test_x_ray_tracing_is_one_parameter(
    translated: dict[str, Any], tracing: str, mode: str, disabled: str, api: bool
) -> None:
    """Off by default: the powertools Tracer (and the X-Ray SDK it imports) stays out of cold starts."""
    for function in ("ApiFunction", "SchedulerFunction", "IdleStopFunction"):
        properties = translated["Resources"][function]["Properties"]
        assert value(translated, properties["TracingConfig"]["Mode"], Tracing=tracing) == mode
        variables = value(translated, properties["Environment"]["Variables"], Tracing=tracing)
        assert variables["POWERTOOLS_TRACE_DISABLED"] == disabled
    (stage,) = resources(translated, "AWS::ApiGateway::Stage").values()
    assert value(translated, stage["Properties"]["TracingEnabled"], Tracing=tracing) is api
    assert translated["Parameters"]["Tracing"]["AllowedValues"] == ["Disabled", "Active"]
