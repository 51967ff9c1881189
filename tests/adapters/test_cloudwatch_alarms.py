"""The idle alarms adapter against moto's CloudWatch: put, list by prefix (every page), states,
delete (names already gone included), two stacks' alarms side by side, and CloudWatch failures as
typed errors."""

from __future__ import annotations

import uuid
from typing import Any
from unittest.mock import MagicMock

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from smq_lambda.adapters.cloudwatch_alarms import CloudWatchIdleAlarms
from smq_lambda.errors import AlarmServiceError
from smq_lambda.governance.idle import AlarmPrefix, alarm_requests
from smq_lambda.governance.idle_notifications import notification_of_alarm
from smq_lambda.governance.idle_scope import CPU_METRIC, GPU_METRIC
from smq_lambda.governance.policy import IdlePolicy

from tests.support.aws import REGION

TOPIC = f"arn:aws:sns:{REGION}:123456789012:idle"
PREFIX = AlarmPrefix("smq-idle-smq.")
OTHER_STACK = AlarmPrefix("smq-idle-smq-2.")
"""A second stack in the same account and Region, whose name starts with the first's."""


@pytest.fixture
def cloudwatch(aws: None) -> Any:
    """Each test in its own region, so listings see only its own alarms."""
    return boto3.client("cloudwatch", region_name="eu-north-1")


def _job() -> str:
    return f"job-{uuid.uuid4().hex[:8]}-1"


def test_put_alarms_are_listed_with_their_state(cloudwatch: Any) -> None:
    alarms = CloudWatchIdleAlarms(cloudwatch, PREFIX)
    job = _job()
    alarms.put(alarm_requests(PREFIX, job, 12, IdlePolicy(), TOPIC))
    cloudwatch.put_metric_alarm(
        AlarmName="someone-elses",
        MetricName="CPUUtilization",
        Namespace="AWS/EC2",
        Statistic="Average",
        Period=60,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="LessThanThreshold",
    )
    names = alarms.names()
    assert names == [f"smq-idle-smq.{job}.part-1-of-2", f"smq-idle-smq.{job}.part-2-of-2"]
    cloudwatch.set_alarm_state(AlarmName=names[1], StateValue="ALARM", StateReason="idle")
    assert alarms.states(names)[names[1]] == "ALARM"
    assert alarms.states(names).keys() == set(names)
    described = cloudwatch.describe_alarms(AlarmNames=names[:1])["MetricAlarms"][0]
    assert described["AlarmActions"] == [TOPIC]
    alarms.delete(names)
    assert alarms.names() == []
    cloudwatch.delete_alarms(AlarmNames=["someone-elses"])


def test_listing_reads_every_page(cloudwatch: Any) -> None:
    alarms = CloudWatchIdleAlarms(cloudwatch, PREFIX)
    jobs = sorted(_job() for _ in range(105))
    for job in jobs:
        alarms.put(alarm_requests(PREFIX, job, 1, IdlePolicy(), TOPIC))
    names = alarms.names()
    assert names == [f"smq-idle-smq.{job}" for job in jobs]
    alarms.delete(names[:100])
    alarms.delete(names[100:])
    assert alarms.names() == []


def test_deleting_alarms_already_gone_is_fine(cloudwatch: Any) -> None:
    alarms = CloudWatchIdleAlarms(cloudwatch, PREFIX)
    job = _job()
    alarms.put(alarm_requests(PREFIX, job, 1, IdlePolicy(), TOPIC))
    alarms.delete([f"smq-idle-smq.{job}", "smq-idle-smq.never-existed-1"])
    alarms.delete([f"smq-idle-smq.{job}"])
    assert alarms.names() == []


def test_two_stacks_in_one_account_never_list_or_touch_each_others_alarms(cloudwatch: Any) -> None:
    mine, theirs = CloudWatchIdleAlarms(cloudwatch, PREFIX), CloudWatchIdleAlarms(cloudwatch, OTHER_STACK)
    job = _job()
    mine.put(alarm_requests(PREFIX, job, 12, IdlePolicy(), TOPIC))
    theirs.put(alarm_requests(OTHER_STACK, job, 1, IdlePolicy(), TOPIC))
    their_names = [f"smq-idle-smq-2.{job}"]

    assert mine.names() == [f"smq-idle-smq.{job}.part-1-of-2", f"smq-idle-smq.{job}.part-2-of-2"]
    assert theirs.names() == their_names
    for call in (
        lambda: mine.delete(their_names),
        lambda: mine.states(their_names),
        lambda: mine.put(alarm_requests(OTHER_STACK, job, 1, IdlePolicy(), TOPIC)),
    ):
        with pytest.raises(ValueError, match=r"smq-idle-smq[.]"):
            call()
    mine.delete(mine.names())
    assert mine.names() == []
    assert theirs.names() == their_names
    theirs.delete(their_names)


def test_the_alarms_in_alarm_are_this_stacks_only_and_read_back_as_notifications(cloudwatch: Any) -> None:
    mine, theirs = CloudWatchIdleAlarms(cloudwatch, PREFIX), CloudWatchIdleAlarms(cloudwatch, OTHER_STACK)
    idle, busy, wide = _job(), _job(), _job()
    for job in (idle, busy):
        mine.put(alarm_requests(PREFIX, job, 1, IdlePolicy(), TOPIC))
    mine.put(alarm_requests(PREFIX, wide, 12, IdlePolicy(cpu_threshold_percent=5), TOPIC, metric=CPU_METRIC))
    theirs.put(alarm_requests(OTHER_STACK, idle, 1, IdlePolicy(), TOPIC))
    in_alarm = [f"smq-idle-smq.{idle}", f"smq-idle-smq.{wide}.part-2-of-2", f"smq-idle-smq-2.{idle}"]
    for name in in_alarm:
        cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="idle for 3 periods")
    cloudwatch.set_alarm_state(AlarmName=f"smq-idle-smq.{busy}", StateValue="OK", StateReason="busy")

    notifications = [notification_of_alarm(PREFIX, alarm) for alarm in mine.in_alarm()]

    assert sorted((n.alarm.name, n.state, n.metric) for n in notifications if n is not None) == sorted(
        [(in_alarm[0], "ALARM", GPU_METRIC), (in_alarm[1], "ALARM", CPU_METRIC)]
    )
    assert all(n is not None and n.description and n.state_reason == "idle for 3 periods" for n in notifications)
    assert [alarm["AlarmName"] for alarm in theirs.in_alarm()] == [in_alarm[2]]
    mine.delete(mine.names())
    theirs.delete(theirs.names())


def test_a_delete_refused_for_a_missing_name_still_deletes_the_others() -> None:
    client = MagicMock()
    missing = ClientError({"Error": {"Code": "ResourceNotFound", "Message": "gone"}}, "DeleteAlarms")
    client.delete_alarms.side_effect = [missing, None]
    client.get_paginator.return_value.paginate.return_value = [
        {"MetricAlarms": [{"AlarmName": "smq-idle-smq.a-1", "StateValue": "OK"}]}
    ]
    CloudWatchIdleAlarms(client, PREFIX).delete(["smq-idle-smq.a-1", "smq-idle-smq.b-1"])
    assert client.delete_alarms.call_args_list[-1].kwargs == {"AlarmNames": ["smq-idle-smq.a-1"]}


@pytest.mark.parametrize(
    "failure",
    [
        ClientError({"Error": {"Code": "Throttling", "Message": "slow down"}}, "PutMetricAlarm"),
        ClientError({"Error": {"Code": "LimitExceeded", "Message": "too many alarms"}}, "PutMetricAlarm"),
        EndpointConnectionError(endpoint_url="https://monitoring.example"),
    ],
)
def test_cloudwatch_failures_are_typed(failure: Exception) -> None:
    client = MagicMock()
    client.put_metric_alarm.side_effect = failure
    client.delete_alarms.side_effect = failure
    client.get_paginator.return_value.paginate.side_effect = failure
    alarms = CloudWatchIdleAlarms(client, PREFIX)
    for call in (
        lambda: alarms.put(alarm_requests(PREFIX, "job-1", 1, IdlePolicy(), TOPIC)),
        lambda: alarms.delete(["smq-idle-smq.job-1"]),
        alarms.names,
        lambda: alarms.states(["smq-idle-smq.job-1"]),
        alarms.in_alarm,
    ):
        with pytest.raises(AlarmServiceError) as raised:
            call()
        expected = failure.response["Error"]["Code"] if isinstance(failure, ClientError) else "EndpointConnectionError"
        assert raised.value.code == expected


def test_names_outside_the_prefix_are_never_sent() -> None:
    client = MagicMock()
    with pytest.raises(ValueError, match=r"smq-idle-smq[.]"):
        CloudWatchIdleAlarms(client, PREFIX).delete(["ops-alarm"])
    client.delete_alarms.assert_not_called()
