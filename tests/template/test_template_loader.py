"""smq.local.template: reading CloudFormation YAML and deriving the table, the SSM parameters and
the functions' environment from it, as the local stack does."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from smq.local.template import (
    TemplateError,
    evaluate,
    function_environment,
    function_policies,
    load_template,
    sns_subscriptions,
    ssm_parameters,
    table_definition,
)
from smq_lambda.governance.policy import Policy, parse_policy

from tests.template.template_support import REQUIRED_PARAMETERS, TEMPLATE_PATH

CONTRACT_VARIABLES = {
    "SMQ_TABLE_NAME",
    "SMQ_POOLS_PARAMETER",
    "SMQ_UNPOOLED",
    "SMQ_BACKFILL",
    "SMQ_CHECKPOINT_S3_PREFIX",
    "SMQ_ALLOWED_ROLE_ARNS",
    "SMQ_ADMIN_PRINCIPALS",
    "SMQ_FINISHED_TTL_DAYS",
    "SMQ_POLICY_PARAMETER",
    "SMQ_STACK_POLICY",
    "SMQ_STACK_NAME",
    "POWERTOOLS_SERVICE_NAME",
    "POWERTOOLS_METRICS_NAMESPACE",
    "POWERTOOLS_TRACE_DISABLED",
}

SAMPLE = """\
AWSTemplateFormatVersion: 2010-09-09
Parameters:
  Mode: {Type: String, Default: fast, AllowedValues: [fast, slow]}
  Names: {Type: CommaDelimitedList, Default: "a,b"}
  Count: {Type: Number, Default: 3}
  Needed: {Type: String}
Mappings:
  Sizes:
    fast: {memory: 512}
    slow: {memory: 1024}
Conditions:
  IsFast: !Equals [!Ref Mode, fast]
  IsSlow: !Not [!Condition IsFast]
  Either: !Or [!Condition IsFast, !Condition IsSlow]
Globals:
  Function:
    Environment:
      Variables:
        SHARED: shared
        OVERRIDDEN: from-globals
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
  Param:
    Type: AWS::SSM::Parameter
    Properties:
      Name: !Sub /app/${AWS::StackName}/${Mode}
      Type: String
      Value: !Join ["|", !Ref Names]
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          OVERRIDDEN: own
          TABLE: !Ref Table
          TABLE_ARN: !GetAtt Table.Arn
          STREAM: !GetAtt [Table, StreamArn]
          PARAM: !Ref Param
          SUB: !Sub "${Table}:${Table.Arn}:${AWS::Region}:${!Literal}:${Count}"
          SUB_VARS: !Sub ["${x}-${Mode}", {x: !Select [1, !Ref Names]}]
          SPLIT: !Select [2, !Split [",", "p,q,r"]]
          MAPPED: !FindInMap [Sizes, !Ref Mode, memory]
          CHOSEN: !If [IsSlow, slow-value, fast-value]
          DROPPED: !If [IsSlow, kept, !Ref AWS::NoValue]
          NEEDED: !Ref Needed
          ENCODED: !Base64 hi
          FLAG: true
          BOTH: !If [Either, yes-either, no]
"""


def resolver(calls: list[tuple[str, str | None]]) -> Any:
    def resolve(logical_id: str, attribute: str | None) -> str:
        calls.append((logical_id, attribute))
        return f"{logical_id}.{attribute}" if attribute else f"physical-{logical_id}"

    return resolve


@pytest.fixture
def sample(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "template.yaml"
    path.write_text(SAMPLE, encoding="utf-8")
    return load_template(path)


def test_short_form_tags_become_long_form(tmp_path: Path) -> None:
    path = tmp_path / "tags.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            Resources:
              R:
                Type: X
                Properties:
                  A: !GetAtt Res.Endpoint.Address
                  B: !Transform {Name: AWS::Include, Parameters: {Location: x.yaml}}
                  C: !And [!Condition C1, !Not [!Equals [a, b]]]
                  D: !Base64 {"Fn::Sub": "x"}
                  E: !ImportValue shared
            """
        ),
        encoding="utf-8",
    )
    properties = load_template(path)["Resources"]["R"]["Properties"]
    assert properties == {
        "A": {"Fn::GetAtt": ["Res", "Endpoint.Address"]},
        "B": {"Fn::Transform": {"Name": "AWS::Include", "Parameters": {"Location": "x.yaml"}}},
        "C": {"Fn::And": [{"Condition": "C1"}, {"Fn::Not": [{"Fn::Equals": ["a", "b"]}]}]},
        "D": {"Fn::Base64": {"Fn::Sub": "x"}},
        "E": {"Fn::ImportValue": "shared"},
    }


def test_dates_stay_text(sample: dict[str, Any]) -> None:
    assert sample["AWSTemplateFormatVersion"] == "2010-09-09"


def test_a_file_without_resources_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("just: data\n", encoding="utf-8")
    with pytest.raises(TemplateError):
        load_template(path)


def test_function_environment_evaluates_every_intrinsic(sample: dict[str, Any]) -> None:
    calls: list[tuple[str, str | None]] = []
    environment = function_environment(
        sample,
        "Fn",
        resolver(calls),
        parameter_overrides={"Needed": "given"},
        pseudo_parameters={"AWS::StackName": "st"},
    )
    assert environment == {
        "SHARED": "shared",
        "OVERRIDDEN": "own",
        "TABLE": "physical-Table",
        "TABLE_ARN": "Table.Arn",
        "STREAM": "Table.StreamArn",
        "PARAM": "/app/st/fast",
        "SUB": "physical-Table:Table.Arn:us-east-1:${Literal}:3",
        "SUB_VARS": "b-fast",
        "SPLIT": "r",
        "MAPPED": "512",
        "CHOSEN": "fast-value",
        "NEEDED": "given",
        "ENCODED": "aGk=",
        "FLAG": "true",
        "BOTH": "yes-either",
    }
    assert ("Param", None) not in calls  # an SSM parameter's Ref is its Name, from the template


def test_overrides_and_conditions(sample: dict[str, Any]) -> None:
    environment = function_environment(
        sample, "Fn", resolver([]), parameter_overrides={"Needed": "n", "Mode": "slow", "Names": ["x", "y"]}
    )
    assert (environment["CHOSEN"], environment["DROPPED"], environment["SUB_VARS"], environment["MAPPED"]) == (
        "slow-value",
        "kept",
        "y-slow",
        "1024",
    )


def test_a_parameter_without_default_must_be_given(sample: dict[str, Any]) -> None:
    with pytest.raises(TemplateError, match="Needed"):
        function_environment(sample, "Fn", resolver([]))


def test_unsupported_intrinsics_and_unknown_names_are_errors(sample: dict[str, Any]) -> None:
    with pytest.raises(TemplateError, match="Fn::ImportValue"):
        evaluate(sample, {"Fn::ImportValue": "x"})
    with pytest.raises(TemplateError, match="Nope"):
        evaluate(sample, {"Ref": "Nope"})
    with pytest.raises(TemplateError, match="resolver"):
        evaluate(sample, {"Fn::GetAtt": ["Table", "Arn"]})
    with pytest.raises(TemplateError):
        function_environment(sample, "Table", resolver([]))


def test_ssm_parameters(sample: dict[str, Any]) -> None:
    assert ssm_parameters(sample) == [("/app/smq/fast", "a|b")]
    assert ssm_parameters(sample, {"Names": "x,y,z", "Mode": "slow"}, pseudo_parameters={"AWS::StackName": "dev"}) == [
        ("/app/dev/slow", "x|y|z")
    ]


def test_table_definition_creates_the_template_table() -> None:
    template = load_template(TEMPLATE_PATH)
    definition = table_definition(template, "local-queue")
    ttl = definition.pop("TimeToLiveSpecification")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(**definition)
        client.update_time_to_live(TableName="local-queue", TimeToLiveSpecification=ttl)
        table = client.describe_table(TableName="local-queue")["Table"]
        described_ttl = client.describe_time_to_live(TableName="local-queue")["TimeToLiveDescription"]
    properties = template["Resources"]["QueueTable"]["Properties"]
    assert table["KeySchema"] == properties["KeySchema"]
    assert {i["IndexName"]: i["KeySchema"] for i in table["GlobalSecondaryIndexes"]} == {
        i["IndexName"]: i["KeySchema"] for i in properties["GlobalSecondaryIndexes"]
    }
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert described_ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}


def test_table_definition_follows_the_template(sample: dict[str, Any]) -> None:
    assert table_definition(sample) == {
        "TableName": "Table",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "BillingMode": "PROVISIONED",
    }
    with pytest.raises(TemplateError):
        table_definition(sample, logical_id="Param")


@pytest.mark.parametrize("function", ["ApiFunction", "SchedulerFunction", "IdleStopFunction"])
def test_real_template_environment_is_the_contracts(function: str) -> None:
    template = load_template(TEMPLATE_PATH)
    environment = function_environment(template, function, resolver([]), parameter_overrides=REQUIRED_PARAMETERS)
    own = {
        "ApiFunction": {"SMQ_SCHEDULER_QUEUE_URL", "SMQ_ACCESS_RULES_PARAMETER"},
        "SchedulerFunction": {
            "SMQ_STUCK_AFTER_SECONDS",
            "SMQ_MAX_START_REFUSALS",
            "SMQ_MAX_START_REFUSAL_HOURS",
            "SMQ_POLICY_TOPIC_ARN",
            "SMQ_IDLE_TOPIC_ARN",
            "SMQ_IDLE_ALARM_PREFIX",
        },
        "IdleStopFunction": {"SMQ_IDLE_ALARM_PREFIX", "SMQ_POLICY_TOPIC_ARN"},
    }
    expected = CONTRACT_VARIABLES | own[function]
    assert set(environment) == expected
    parameters = dict(ssm_parameters(template, REQUIRED_PARAMETERS))
    assert parse_policy(json.loads(parameters[environment["SMQ_POLICY_PARAMETER"]])) == Policy()
    assert environment["SMQ_STACK_POLICY"] == parameters[environment["SMQ_POLICY_PARAMETER"]]
    assert environment["SMQ_STACK_NAME"] == "smq", "the stack's own name tags its attempts (smq:stack)"
    assert parameters[environment["SMQ_POOLS_PARAMETER"]] == template["Parameters"]["CapacityPools"]["Default"]
    assert environment["SMQ_TABLE_NAME"] == "physical-QueueTable"
    assert environment["SMQ_ALLOWED_ROLE_ARNS"] == REQUIRED_PARAMETERS["AllowedRoleArns"]
    assert (environment["SMQ_UNPOOLED"], environment["SMQ_BACKFILL"], environment["SMQ_FINISHED_TTL_DAYS"]) == (
        "reject",
        "true",
        "30",
    )
    assert (environment["SMQ_ADMIN_PRINCIPALS"], environment["POWERTOOLS_SERVICE_NAME"]) == ("", "smq")
    assert environment["POWERTOOLS_TRACE_DISABLED"] == "true"  # Tracing: Disabled by default
    if function == "ApiFunction":
        assert environment["SMQ_SCHEDULER_QUEUE_URL"] == "physical-SchedulerQueue"


def test_the_functions_subscribed_to_topics_come_from_their_sns_events() -> None:
    """What the local stack subscribes to moto's topics, as SAM does for `Events: {Type: SNS}`."""
    calls: list[tuple[str, str | None]] = []

    template = load_template(TEMPLATE_PATH)

    subscriptions = sns_subscriptions(template, resolver(calls), parameter_overrides=REQUIRED_PARAMETERS)

    assert subscriptions == [("IdleStopFunction", "smq_lambda.handlers.idle.handler", "physical-IdleAlarmTopic")]
    assert calls == [("IdleAlarmTopic", None)]


@pytest.mark.parametrize(
    ("policies", "expected"),
    [
        (
            [{"Statement": {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": {"Fn::GetAtt": ["Q", "Arn"]}}}],
            [
                {
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "physical-Q.Arn"}],
                }
            ],
        ),
        ([], []),
        (["AWSLambdaBasicExecutionRole"], TemplateError),
        ([{"SQSPollerPolicy": {"QueueName": "q"}}], TemplateError),
    ],
)
def test_a_functions_policies_are_its_inline_documents_evaluated(policies: list[Any], expected: Any) -> None:
    """The local stack makes each function's role from these; what it could not read it refuses."""
    template = {"Resources": {"F": {"Type": "AWS::Serverless::Function", "Properties": {"Policies": policies}}}}

    def resolve(logical_id: str, attribute: str | None) -> str:
        return f"physical-{logical_id}.{attribute}"

    if expected is TemplateError:
        with pytest.raises(TemplateError, match="only inline policy documents"):
            function_policies(template, "F", resolve)
    else:
        assert function_policies(template, "F", resolve) == expected
