"""What the stack tells ops (after the SAM transform): the API stage's throttling, the alarms and
the topic they notify, the dashboard, and that none of it widens anyone's permissions."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import pytest
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from smq.local.template import function_environment
from smq_lambda.handlers.scheduler import NAMESPACE

from tests.template.template_support import REQUIRED_PARAMETERS
from tests.template.test_template_policies import ACCOUNT, function_role, resolve, resources, value

OPS_TOPIC = {"Ref": "OpsTopic"}
SCHEDULER = {"Ref": "SchedulerFunction"}
# Lower-cased: IAM action names are case-insensitive.
KMS_USAGE_ACTIONS = {
    "kms:encrypt",
    "kms:decrypt",
    "kms:reencrypt*",
    "kms:reencryptfrom",
    "kms:reencryptto",
    "kms:generatedatakey*",
    "kms:generatedatakey",
    "kms:creategrant",
    "kms:*",
}


def emitted_dimensions(**dimensions: str) -> list[str]:
    """The dimension set CloudWatch files a metric under, as powertools writes it (EMF), with the
    namespace and service the handlers use."""
    metric = EphemeralMetrics(namespace=NAMESPACE, service="smq")
    for name, dimension_value in dimensions.items():
        metric.add_dimension(name=name, value=dimension_value)
    metric.add_metric(name="Probe", unit=MetricUnit.Count, value=1)
    (directive,) = metric.serialize_metric_set()["_aws"]["CloudWatchMetrics"]
    (dimension_set,) = directive["Dimensions"]
    assert directive["Namespace"] == "smq"
    return sorted(dimension_set)


def alarms(translated: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical_id: alarm["Properties"] for logical_id, alarm in resources(translated, "AWS::CloudWatch::Alarm").items()
    }


def dashboard(translated: dict[str, Any]) -> dict[str, Any]:
    (board,) = resources(translated, "AWS::CloudWatch::Dashboard").values()
    return json.loads(value(translated, board["Properties"]["DashboardBody"]))


def metric_widgets(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [widget["properties"] for widget in body["widgets"] if widget["type"] == "metric"]


def charted_metrics(body: dict[str, Any]) -> set[tuple[str, str, tuple[str, ...]]]:
    """(namespace, metric, dimension names) of every metric the dashboard draws, named or found by
    a SEARCH expression."""
    charted = set()
    for properties in metric_widgets(body):
        for row in properties["metrics"]:
            if isinstance(row[0], dict):
                charted.add(search_target(row[0]["expression"]))
            else:
                names = [item for item in row if isinstance(item, str)]
                namespace, metric, dimensions = names[0], names[1], names[2:]
                charted.add((namespace, metric, tuple(sorted(dimensions[0::2]))))
    return charted


SEARCH = re.compile(r"""^SEARCH\('\{(?P<schema>[^}]*)\} service="smq" MetricName="(?P<metric>\w+)"', '\w+', \d+\)$""")


def search_target(expression: str) -> tuple[str, str, tuple[str, ...]]:
    match = SEARCH.match(expression)
    assert match, expression
    namespace, *dimensions = match["schema"].split(",")
    return namespace, match["metric"], tuple(sorted(dimensions))


# ---------------------------------------------------------------- API stage throttling


@pytest.mark.parametrize(
    ("overrides", "rate", "burst"),
    [({}, 50, 100), ({"ApiThrottlingRateLimit": "5", "ApiThrottlingBurstLimit": "8"}, 5, 8)],
)
def test_every_method_of_the_stage_is_throttled_by_the_parameters(
    translated: dict[str, Any], overrides: dict[str, str], rate: int, burst: int
) -> None:
    (stage,) = resources(translated, "AWS::ApiGateway::Stage").values()
    (setting,) = value(translated, stage["Properties"]["MethodSettings"], **overrides)
    assert (setting["ResourcePath"], setting["HttpMethod"]) == ("/*", "*")
    assert (float(setting["ThrottlingRateLimit"]), int(setting["ThrottlingBurstLimit"])) == (rate, burst)


# ---------------------------------------------------------------- alarms

GE = "GreaterThanOrEqualToThreshold"
GT = "GreaterThanThreshold"
SERVICE = {"service": "smq"}


class Watch(NamedTuple):
    namespace: str
    metric: str
    dimensions: dict[str, Any]
    statistic: str
    comparison: str
    threshold: int
    missing_data: str


def dead_letters(queue: str) -> Watch:
    dimensions = {"QueueName": {"Fn::GetAtt": [queue, "QueueName"]}}
    return Watch("AWS/SQS", "ApproximateNumberOfMessagesVisible", dimensions, "Maximum", GT, 0, "ignore")


ALARMS = {
    "SchedulerErrorsAlarm": Watch("AWS/Lambda", "Errors", {"FunctionName": SCHEDULER}, "Sum", GE, 1, "notBreaching"),
    "SchedulerThrottlesAlarm": Watch(
        "AWS/Lambda", "Throttles", {"FunctionName": SCHEDULER}, "Sum", GE, 1, "notBreaching"
    ),
    "SchedulerDeadLetterAlarm": dead_letters("SchedulerDeadLetterQueue"),
    "SchedulerQueueDeadLetterAlarm": dead_letters("SchedulerQueueDeadLetterQueue"),
    "EventDeliveryDeadLetterAlarm": dead_letters("EventDeliveryDeadLetterQueue"),
    "IdleStopDeadLetterAlarm": dead_letters("IdleStopDeadLetterQueue"),
    "PriceRefreshDeadLetterAlarm": dead_letters("PriceRefreshDeadLetterQueue"),
    "Api5xxAlarm": Watch(
        "AWS/ApiGateway", "5XXError", {"ApiName": "training-job-queue", "Stage": "prod"}, "Sum", GE, 1, "notBreaching"
    ),
    "ApiErrorsAlarm": Watch("smq", "ApiErrors", SERVICE, "Sum", GE, 1, "notBreaching"),
    "JobErrorsAlarm": Watch("smq", "JobErrors", SERVICE, "Sum", GE, 1, "notBreaching"),
    "InvariantViolationsAlarm": Watch("smq", "InvariantViolations", SERVICE, "Sum", GE, 1, "notBreaching"),
    "StuckJobsAlarm": Watch("smq", "StuckJobs", SERVICE, "Maximum", GE, 1, "breaching"),
}


INVALID_DOCUMENTS = ("InvalidConfiguration", "InvalidPolicy", "InvalidAccessRules")
"""What the invalid-documents alarm adds up (adapters/ssm_config.py, ssm_policy.py, ssm_access_rules.py)."""
MATH_ALARMS = {"InvalidDocumentsAlarm"}
"""Alarms on a metric math expression rather than one metric."""


@pytest.mark.parametrize("logical_id", sorted(ALARMS))
def test_alarm_watches_the_metric_it_is_meant_for(translated: dict[str, Any], logical_id: str) -> None:
    alarm = alarms(translated)[logical_id]
    watched = Watch(
        alarm["Namespace"],
        alarm["MetricName"],
        {d["Name"]: d["Value"] for d in alarm["Dimensions"]},
        alarm["Statistic"],
        alarm["ComparisonOperator"],
        alarm["Threshold"],
        alarm["TreatMissingData"],
    )
    assert watched == ALARMS[logical_id]


def test_every_alarm_is_listed_above_and_notifies_the_ops_topic(translated: dict[str, Any]) -> None:
    assert set(alarms(translated)) == set(ALARMS) | MATH_ALARMS
    for logical_id, alarm in alarms(translated).items():
        assert (alarm["AlarmActions"], alarm["OKActions"]) == ([OPS_TOPIC], [OPS_TOPIC]), logical_id
        assert "InsufficientDataActions" not in alarm, logical_id
        name = value(translated, alarm["AlarmName"])
        assert name.startswith("smq-"), logical_id  # the stack's name: two stacks never share an alarm


def test_custom_metric_alarms_use_the_dimensions_powertools_emits(translated: dict[str, Any]) -> None:
    custom = {
        logical_id: alarm for logical_id, alarm in alarms(translated).items() if alarm.get("Namespace") == NAMESPACE
    }
    assert set(custom) == {"ApiErrorsAlarm", "JobErrorsAlarm", "InvariantViolationsAlarm", "StuckJobsAlarm"}
    for logical_id, alarm in custom.items():
        assert sorted(d["Name"] for d in alarm["Dimensions"]) == emitted_dimensions(), logical_id


def test_the_invalid_documents_alarm_adds_up_every_documents_count(translated: dict[str, Any]) -> None:
    alarm = alarms(translated)["InvalidDocumentsAlarm"]
    (total,) = [query for query in alarm["Metrics"] if query["ReturnData"]]
    watched = {}
    for query in alarm["Metrics"]:
        if "MetricStat" in query:
            metric, stat = query["MetricStat"]["Metric"], query["MetricStat"]["Stat"]
            assert metric["Namespace"] == NAMESPACE and stat == "Sum", query["Id"]
            assert sorted(d["Name"] for d in metric["Dimensions"]) == emitted_dimensions(), query["Id"]
            assert f"FILL({query['Id']}, 0)" in total["Expression"]
            watched[metric["MetricName"]] = query["Id"]
    assert sorted(watched) == sorted(INVALID_DOCUMENTS)
    assert total["Expression"].startswith("SUM([")
    assert (alarm["ComparisonOperator"], alarm["Threshold"], alarm["TreatMissingData"]) == (GE, 1, "notBreaching")


def test_api_alarm_names_the_deployed_api_and_stage(translated: dict[str, Any]) -> None:
    (api,) = resources(translated, "AWS::ApiGateway::RestApi").values()
    (stage,) = resources(translated, "AWS::ApiGateway::Stage").values()
    dimensions = {d["Name"]: d["Value"] for d in alarms(translated)["Api5xxAlarm"]["Dimensions"]}
    # REST APIs publish per-stage metrics under ApiName + Stage (ApiId is for HTTP APIs).
    assert dimensions == {"ApiName": api["Properties"]["Name"], "Stage": stage["Properties"]["StageName"]}


@pytest.mark.parametrize(
    ("logical_id", "period", "evaluation_periods", "datapoints"),
    [
        # A throttle now and then is an invocation that met the concurrency limit; 15 minutes of
        # them mean the concurrency is short and batches wait.
        ("SchedulerThrottlesAlarm", 300, 3, 3),
        # Clients retry 503s: a lasting run of 5xx alarms, a single blip does not.
        ("Api5xxAlarm", 60, 5, 3),
        # The scheduler publishes StuckJobs at least every 5 minutes: two periods, so one late
        # reconciliation tick is not mistaken for a silent scheduler.
        ("StuckJobsAlarm", 300, 2, 2),
    ],
)
def test_alarms_that_wait_for_a_lasting_condition(
    translated: dict[str, Any], logical_id: str, period: int, evaluation_periods: int, datapoints: int
) -> None:
    alarm = alarms(translated)[logical_id]
    assert (alarm["Period"], alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (
        period,
        evaluation_periods,
        datapoints,
    )


@pytest.mark.parametrize(
    "logical_id", ["SchedulerErrorsAlarm", "ApiErrorsAlarm", "JobErrorsAlarm", "InvariantViolationsAlarm"]
)
def test_alarms_that_fire_at_the_first_occurrence(translated: dict[str, Any], logical_id: str) -> None:
    """Each of these counts what should never happen: one in a 5-minute period calls for a person."""
    alarm = alarms(translated)[logical_id]
    assert (alarm["Period"], alarm["EvaluationPeriods"], alarm.get("DatapointsToAlarm")) == (300, 1, None)


def test_the_stuck_threshold_reaches_the_scheduler_and_the_alarm_text(
    template: dict[str, Any], translated: dict[str, Any]
) -> None:
    def scheduler_environment(overrides: Mapping[str, str]) -> dict[str, str]:
        return function_environment(
            template, "SchedulerFunction", resolve, parameter_overrides={**REQUIRED_PARAMETERS, **overrides}
        )

    assert scheduler_environment({})["SMQ_STUCK_AFTER_SECONDS"] == "900"
    assert scheduler_environment({"StuckJobThresholdSeconds": "1800"})["SMQ_STUCK_AFTER_SECONDS"] == "1800"
    description = alarms(translated)["StuckJobsAlarm"]["AlarmDescription"]
    assert "1800 seconds" in value(translated, description, StuckJobThresholdSeconds="1800")


# ---------------------------------------------------------------- the ops topic


def test_the_ops_topic_is_encrypted_with_a_key_only_cloudwatch_alarms_may_use(translated: dict[str, Any]) -> None:
    (topic,) = [t for t in resources(translated, "AWS::SNS::Topic").values() if "KmsMasterKeyId" in t["Properties"]]
    assert topic == translated["Resources"]["OpsTopic"]
    # Not alias/aws/sns: its key policy cannot admit CloudWatch, so alarms could not publish.
    assert topic["Properties"]["KmsMasterKeyId"] == {"Ref": "OpsTopicKey"}
    key = translated["Resources"]["OpsTopicKey"]["Properties"]
    assert key["EnableKeyRotation"] is True
    usage: dict[str, set[str]] = {}
    for statement in value(translated, key["KeyPolicy"])["Statement"]:
        assert statement["Effect"] == "Allow"
        actions = {action.lower() for action in statement["Action"]}
        principal = json.dumps(statement["Principal"], sort_keys=True)
        if actions & KMS_USAGE_ACTIONS:
            usage[principal] = actions
        else:
            assert statement["Principal"] == {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}
            assert all("*" not in action for action in actions)
    assert usage == {json.dumps({"Service": "cloudwatch.amazonaws.com"}): {"kms:generatedatakey*", "kms:decrypt"}}


@pytest.mark.parametrize(
    ("email", "subscribed"),
    [("", False), ("ops@example.com", True)],
)
def test_an_email_is_subscribed_only_when_given(translated: dict[str, Any], email: str, subscribed: bool) -> None:
    subscription = resources(translated, "AWS::SNS::Subscription")["OpsAlarmEmailSubscription"]
    condition = translated["Conditions"][subscription["Condition"]]
    assert value(translated, condition, OpsAlarmEmail=email) is subscribed
    properties = value(translated, subscription["Properties"], OpsAlarmEmail=email)
    assert properties == {"TopicArn": "physical-OpsTopic", "Protocol": "email", "Endpoint": email}


@pytest.mark.parametrize(
    ("email", "accepted"),
    [("", True), ("ops@example.com", True), ("ops", False), ("a@b.com,c@d.com", False), ("a b@c.com", False)],
)
def test_the_email_parameter_takes_one_address_or_none(template: dict[str, Any], email: str, accepted: bool) -> None:
    pattern = template["Parameters"]["OpsAlarmEmail"]["AllowedPattern"]
    assert (re.fullmatch(pattern, email) is not None) is accepted


# ---------------------------------------------------------------- the dashboard


def test_the_dashboard_body_is_json_with_every_widget_in_the_stacks_region(translated: dict[str, Any]) -> None:
    body = dashboard(translated)
    assert metric_widgets(body)
    for properties in metric_widgets(body):
        assert properties["region"] == "us-east-1"
        ids = [row[0]["id"] for row in properties["metrics"] if isinstance(row[0], dict)]
        assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[a-z]\w*", i) for i in ids), properties["title"]


def test_the_dashboard_charts_what_ops_watch(translated: dict[str, Any]) -> None:
    per_pool = tuple(emitted_dimensions(pool="ml.g5.xlarge"))
    per_team = tuple(emitted_dimensions(team="vision", pool="ml.g5.xlarge"))
    team_only = tuple(emitted_dimensions(team="vision"))
    service = tuple(emitted_dimensions())
    api = ("ApiName", "Stage")
    expected = {
        ("smq", "QueueDepth", per_pool),
        ("smq", "WaitTime", per_pool),
        ("smq", "PoolInUse", per_pool),
        ("smq", "PoolCapacity", per_pool),
        ("smq", "TeamInUse", per_team),
        ("smq", "TeamBorrowed", per_team),
        ("smq", "TeamPending", per_team),
        ("smq", "TeamWaitTime", per_team),
        ("smq", "TeamSpendUsd", team_only),
        ("smq", "JobsStarted", service),
        ("smq", "JobsPreempted", service),
        ("smq", "StartsRefused", service),
        ("smq", "ApiErrors", service),
        ("smq", "ApiUnavailable", service),
        ("smq", "JobErrors", service),
        ("smq", "InvariantViolations", service),
        ("smq", "StuckJobs", service),
        ("AWS/ApiGateway", "5XXError", api),
        ("AWS/ApiGateway", "4XXError", api),
        ("AWS/Lambda", "Errors", ("FunctionName",)),
        ("AWS/Lambda", "Throttles", ("FunctionName",)),
    }
    assert expected <= charted_metrics(dashboard(translated))


def test_the_dashboard_shows_every_alarm(translated: dict[str, Any]) -> None:
    (alarm_widget,) = [widget["properties"] for widget in dashboard(translated)["widgets"] if widget["type"] == "alarm"]
    assert sorted(alarm_widget["alarms"]) == sorted(
        resolve(logical_id, "Arn") for logical_id in {*ALARMS, *MATH_ALARMS}
    )


def test_the_dashboard_names_the_deployed_resources(translated: dict[str, Any]) -> None:
    rows = [row for properties in metric_widgets(dashboard(translated)) for row in properties["metrics"]]
    named = {(row[1], row[3]) for row in rows if isinstance(row[0], str) and row[0] in {"AWS/Lambda", "AWS/SQS"}}
    assert named == {
        ("Errors", "physical-SchedulerFunction"),
        ("Throttles", "physical-SchedulerFunction"),
        ("ApproximateNumberOfMessagesVisible", "physical-SchedulerDeadLetterQueue"),
        ("ApproximateNumberOfMessagesVisible", "physical-SchedulerQueueDeadLetterQueue"),
        ("ApproximateNumberOfMessagesVisible", "physical-SchedulerQueue"),
        ("ApproximateNumberOfMessagesVisible", "physical-EventDeliveryDeadLetterQueue"),
        ("ApproximateNumberOfMessagesVisible", "physical-IdleStopDeadLetterQueue"),
    }


# ---------------------------------------------------------------- outputs and permissions


def test_ops_outputs(translated: dict[str, Any]) -> None:
    outputs = {name: value(translated, output["Value"]) for name, output in translated["Outputs"].items()}
    assert outputs["OpsTopicArn"] == "physical-OpsTopic"
    assert outputs["OpsDashboardName"] == "physical-OpsDashboard"
    assert outputs["OpsDashboardUrl"] == (
        "https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#dashboards:name=physical-OpsDashboard"
    )
    assert value(translated, translated["Resources"]["OpsDashboard"]["Properties"]["DashboardName"]) == "smq-us-east-1"


def test_ops_resources_add_no_roles(translated: dict[str, Any]) -> None:
    """Alarms, the topic and the dashboard act as AWS services, never through a role of ours."""
    assert set(resources(translated, "AWS::IAM::Role")) == {
        function_role(translated, "ApiFunction"),
        function_role(translated, "SchedulerFunction"),
        function_role(translated, "IdleStopFunction"),
        function_role(translated, "PriceRefreshFunction"),
    }


def test_searched_series_are_labelled_by_their_pool_or_team(translated: dict[str, Any]) -> None:
    """`${!PROP(...)}` in the template: CloudFormation leaves CloudWatch's dynamic label alone. A
    series with a pool is labelled by its pool first; the team spend series by its team."""
    widgets = metric_widgets(dashboard(translated))
    rows = [row[0] for properties in widgets for row in properties["metrics"] if isinstance(row[0], dict)]
    assert rows
    for row in rows:
        first = "Dim.pool" if "pool" in row["expression"] else "Dim.team"
        assert row["label"].startswith(f"${{PROP('{first}')}}"), row
