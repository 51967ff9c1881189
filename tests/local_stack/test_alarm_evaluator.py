"""The local stack's alarm evaluator: CloudWatch's evaluation of the idle-GPU alarms (table-driven,
pure), and the path of a notification through moto's SNS to the subscribed function's router, as
the idle handler receives it in AWS."""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import SnsModel
from moto.server import ThreadedMotoServer
from smq.local.alarm_evaluator import (
    ALARM,
    INSUFFICIENT_DATA,
    OK,
    AlarmEvaluator,
    Evaluation,
    UnsupportedAlarm,
    evaluate,
    notification,
    subject,
    watched_series,
)
from smq.local.event_router import SNS_PATH, EventRouter
from smq_lambda.governance.idle import AlarmPrefix, alarm_requests
from smq_lambda.governance.idle_notifications import parse_notification
from smq_lambda.governance.idle_scope import CPU_METRIC, GPU_METRIC
from smq_lambda.governance.policy import IdlePolicy

PERIOD = 60
NOW = 1_800_000_030
"""A fixed clock: the last complete 60-second period started at 1_799_999_940."""
HOST = "Host"
PREFIX = AlarmPrefix("smq-idle-smq.")


def idle_alarm(job: str, hosts: int, *, state: str = OK, **idle: Any) -> dict[str, Any]:
    """An idle alarm (the first, for more than 10 hosts) as DescribeAlarms returns it, from the
    request governance/idle.py writes."""
    request = alarm_requests(PREFIX, job, hosts, IdlePolicy(**idle), "arn:aws:sns:us-east-1:000000000000:idle")[0]
    return {
        **request,
        "AlarmArn": f"arn:aws:cloudwatch:us-east-1:000000000000:alarm:{request['AlarmName']}",
        "AlarmConfigurationUpdatedTimestamp": datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        "StateValue": state,
        "OKActions": [],
        "InsufficientDataActions": [],
    }


def periods(*values: float | None) -> list[tuple[int, float | None]]:
    return [(index * PERIOD, value) for index, value in enumerate(values)]


@pytest.mark.parametrize(
    ("case", "idle", "values", "state"),
    [
        ("idle in every period", {}, (0.0, 0.5, 1.0), ALARM),
        ("busy in one period", {}, (0.0, 40.0, 0.0), OK),
        ("no data is not idle", {}, (None, None, None), OK),
        ("a missing period breaks the run", {}, (0.0, None, 0.0), OK),
        ("only as many periods as the policy says", {"evaluation_periods": 2}, (0.0, 0.0), ALARM),
        ("the policy's threshold", {"threshold_percent": 50}, (49.0, 12.0, 50.0), ALARM),
    ],
)
def test_an_idle_alarm_fires_only_when_every_period_is_idle(
    case: str, idle: dict[str, Any], values: tuple[float | None, ...], state: str
) -> None:
    assert evaluate(idle_alarm("job", 1, **idle), periods(*values)).state == state, case


@pytest.mark.parametrize(
    ("treat_missing", "current", "values", "state"),
    [
        ("breaching", OK, (None, None, 0.0), ALARM),
        ("missing", OK, (None, None, None), INSUFFICIENT_DATA),
        ("ignore", ALARM, (None, None, None), ALARM),
        ("missing", ALARM, (50.0, None, None), OK),
    ],
)
def test_missing_data_is_treated_as_the_alarm_says(
    treat_missing: str, current: str, values: tuple[float | None, ...], state: str
) -> None:
    alarm = {**idle_alarm("job", 1, state=current), "TreatMissingData": treat_missing}

    assert evaluate(alarm, periods(*values)).state == state


def test_the_reason_names_the_datapoints_and_the_rule() -> None:
    reason = evaluate(idle_alarm("job", 1), periods(0.0, 0.5, 1.0)).reason

    assert reason.startswith("Threshold Crossed: 3 out of the last 3 datapoints [0 (")
    assert "were less than or equal to the threshold (1)" in reason
    assert reason.endswith("(minimum 3 datapoints for OK -> ALARM transition).")


def test_a_job_is_as_busy_as_its_busiest_host() -> None:
    alarm = idle_alarm("job", 3)
    series = {"host1": {0: 0.0, 60: 0.0}, "host2": {0: 0.0, 60: 80.0}, "host3": {120: 0.0}}

    assert watched_series(alarm, series) == {0: 0.0, 60: 80.0, 120: 0.0}


def test_a_single_host_alarm_watches_its_metric_as_it_is() -> None:
    assert watched_series(idle_alarm("job", 1), {"host1": {0: 3.0}}) == {0: 3.0}


@pytest.mark.parametrize(
    "metrics",
    [
        [{"Id": "a", "Expression": "AVG([m1,m2])", "ReturnData": True}],
        [{"Id": "a", "Expression": "MAX([m1])", "ReturnData": False}],
    ],
)
def test_alarms_it_cannot_evaluate_are_refused(metrics: list[dict[str, Any]]) -> None:
    with pytest.raises(UnsupportedAlarm):
        watched_series({"AlarmName": "smq-idle-smq.x", "Metrics": metrics}, {"m1": {}, "m2": {}})


def test_an_anomaly_detection_comparison_is_refused() -> None:
    alarm = {**idle_alarm("job", 1), "ComparisonOperator": "LessThanLowerThreshold"}

    with pytest.raises(UnsupportedAlarm):
        evaluate(alarm, periods(0.0, 0.0, 0.0))


def test_the_notification_is_cloudwatchs_and_the_idle_handler_reads_it() -> None:
    alarm = idle_alarm("job-a", 12)  # two alarms: the first watches algo-1..algo-10
    evaluation = Evaluation(ALARM, "Threshold Crossed: ...")

    changed_at = datetime(2024, 5, 1, 12, 5, 0, 250000, tzinfo=UTC)

    message = notification(alarm, evaluation, changed_at=changed_at, region="us-east-1", account="000000000000")

    assert message["Region"] == "US East (N. Virginia)"
    assert (message["OldStateValue"], message["NewStateValue"]) == (OK, ALARM)
    assert message["StateChangeTime"] == "2024-05-01T12:05:00.250+0000"
    assert message["Trigger"]["Period"] == 300
    host = message["Trigger"]["Metrics"][0]["MetricStat"]["Metric"]["Dimensions"]
    assert host == [{"value": "job-a/algo-1", "name": HOST}]
    parsed = parse_notification(PREFIX, json.dumps(message))
    assert parsed is not None
    assert (parsed.alarm.training_job_name, parsed.alarm.part, parsed.alarm.parts) == ("job-a", 1, 2)
    assert parsed.state == ALARM and parsed.description == alarm["AlarmDescription"]


def test_the_subject_fits_what_sns_accepts() -> None:
    name = f"smq-idle-{'s' * 128}.{'j' * 63}.part-1-of-2"  # the longest a stack names an alarm

    assert subject(name, ALARM, "us-east-1") == f'ALARM: "{name}'[:100]


# ------------------------------------------------------------------ through moto, SNS and a router


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{server._server.server_port}"
    server.stop()


def client(service: str, endpoint: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def delivered(moto_endpoint: str) -> Iterator[tuple[str, queue.Queue[dict[str, Any]]]]:
    """A topic whose notifications an event router hands to a function; yields (topic, events)."""
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    router = EventRouter(lambda event, context: events.put(event), reconcile_every_seconds=None)
    router.start()
    sns = client("sns", moto_endpoint)
    topic = sns.create_topic(Name=f"idle-{uuid.uuid4().hex[:8]}")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=f"{router.url}{SNS_PATH}")
    yield topic, events
    cloudwatch = client("cloudwatch", moto_endpoint)
    alarms = cloudwatch.describe_alarms(AlarmNamePrefix=PREFIX.value)["MetricAlarms"]
    cloudwatch.delete_alarms(AlarmNames=[alarm["AlarmName"] for alarm in alarms])
    router.shutdown()


def put_gpu(cloudwatch: Any, job: str, host: int, at: float, value: float, metric: str = GPU_METRIC) -> None:
    cloudwatch.put_metric_data(
        Namespace="/aws/sagemaker/TrainingJobs",
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": [{"Name": HOST, "Value": f"{job}/algo-{host}"}],
                "Timestamp": datetime.fromtimestamp(at, UTC),
                "Value": value,
                "Unit": "Percent",
            }
        ],
    )


def evaluator(endpoint: str, *, period: int, now: float, prefix: str = PREFIX.value) -> AlarmEvaluator:
    return AlarmEvaluator(
        client("cloudwatch", endpoint),
        client("sns", endpoint),
        name_prefix=prefix,
        period_seconds=period,
        region="us-east-1",
        account="000000000000",
        clock=lambda: now,
    )


def test_an_idle_job_notifies_the_subscribed_function_once(
    moto_endpoint: str, delivered: tuple[str, queue.Queue[dict[str, Any]]]
) -> None:
    topic, events = delivered
    cloudwatch = client("cloudwatch", moto_endpoint)
    job, now = f"idle-{uuid.uuid4().hex[:8]}", time.time() - 30
    for request in alarm_requests(PREFIX, job, 2, IdlePolicy(evaluation_periods=2), topic):
        cloudwatch.put_metric_alarm(**request)
    end = int(now // 2) * 2
    for at in (end - 4 + 0.5, end - 2 + 0.5):  # the last two complete 2-second periods, both hosts idle
        put_gpu(cloudwatch, job, 1, at, 0.0)
        put_gpu(cloudwatch, job, 2, at, 0.5)

    evaluator(moto_endpoint, period=2, now=now).evaluate_alarms()
    evaluator(moto_endpoint, period=2, now=now).evaluate_alarms()

    (record,) = parse(event=events.get(timeout=10), model=SnsModel).Records
    assert record.Sns.TopicArn == topic
    assert record.Sns.Subject == f'ALARM: "{PREFIX.value}{job}" in US East (N. Virginia)'
    idle = parse_notification(PREFIX, record.Sns.Message)
    assert idle is not None and idle.alarm.training_job_name == job and idle.state == ALARM
    (alarm,) = cloudwatch.describe_alarms(AlarmNames=[f"{PREFIX.value}{job}"])["MetricAlarms"]
    assert alarm["StateValue"] == ALARM
    assert alarm["Metrics"][0]["MetricStat"]["Period"] == 300  # the definition keeps the policy's period
    with pytest.raises(queue.Empty):  # the second evaluation changed nothing, so notified nothing
        events.get(timeout=1)


def test_one_busy_host_keeps_the_job_running(
    moto_endpoint: str, delivered: tuple[str, queue.Queue[dict[str, Any]]]
) -> None:
    topic, events = delivered
    cloudwatch = client("cloudwatch", moto_endpoint)
    job, now = f"busy-{uuid.uuid4().hex[:8]}", time.time() - 30
    for request in alarm_requests(PREFIX, job, 2, IdlePolicy(evaluation_periods=2), topic):
        cloudwatch.put_metric_alarm(**request)
    end = int(now // 2) * 2
    for at in (end - 4 + 0.5, end - 2 + 0.5):
        put_gpu(cloudwatch, job, 1, at, 0.0)
        put_gpu(cloudwatch, job, 2, at, 90.0)

    evaluator(moto_endpoint, period=2, now=now).evaluate_alarms()

    (alarm,) = cloudwatch.describe_alarms(AlarmNames=[f"{PREFIX.value}{job}"])["MetricAlarms"]
    assert alarm["StateValue"] == OK
    with pytest.raises(queue.Empty):
        events.get(timeout=1)


def test_the_cpu_rule_of_a_job_without_gpus_is_evaluated_on_its_cpu_utilization(
    moto_endpoint: str, delivered: tuple[str, queue.Queue[dict[str, Any]]]
) -> None:
    topic, events = delivered
    cloudwatch = client("cloudwatch", moto_endpoint)
    job, now = f"etl-{uuid.uuid4().hex[:8]}", time.time() - 30
    cpu_rule = IdlePolicy(evaluation_periods=2, cpu_threshold_percent=5)
    for request in alarm_requests(PREFIX, job, 2, cpu_rule, topic, metric=CPU_METRIC):
        cloudwatch.put_metric_alarm(**request)
    end = int(now // 2) * 2
    for at in (end - 4 + 0.5, end - 2 + 0.5):  # busy GPUs would not matter: the alarm reads CPUs
        put_gpu(cloudwatch, job, 1, at, 3.0, CPU_METRIC)
        put_gpu(cloudwatch, job, 2, at, 4.5, CPU_METRIC)
        put_gpu(cloudwatch, job, 1, at, 90.0)

    evaluator(moto_endpoint, period=2, now=now).evaluate_alarms()

    (record,) = parse(event=events.get(timeout=10), model=SnsModel).Records
    idle = parse_notification(PREFIX, record.Sns.Message)
    assert idle is not None and idle.alarm.training_job_name == job and idle.state == ALARM
    assert idle.metric == CPU_METRIC
    assert idle.description is not None and "5% CPU utilization" in idle.description


def test_the_evaluator_thread_stops_on_shutdown(moto_endpoint: str) -> None:
    running = evaluator(moto_endpoint, period=1, now=time.time(), prefix="no-such-alarm-")
    running.start()
    time.sleep(1.5)

    running.shutdown()

    assert not [thread for thread in threading.enumerate() if thread.name == "smq-alarm-evaluator"]
