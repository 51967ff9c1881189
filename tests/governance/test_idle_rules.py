"""The idle rules beyond GPUs: the optional CPU rule for instances without GPUs, the exemption tag
and who may set it, alarms already in ALARM read back as notifications, and the policy keys."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest
from botocore.validate import validate_parameters
from smq_lambda.errors import AccessDenied, InvalidRequest
from smq_lambda.governance.actions import DeleteIdleAlarms, PutIdleAlarms, StopIdleJob
from smq_lambda.governance.idle import AlarmRef, alarm_requests, decide_idle, watch
from smq_lambda.governance.idle_notifications import notification_of_alarm, parse_notification
from smq_lambda.governance.idle_scope import (
    CPU_METRIC,
    EXEMPT_TAG,
    GPU_METRIC,
    check_exemption,
    idle_metric,
    instance_types,
    is_cpu_only,
    is_exempt,
)
from smq_lambda.governance.policy import IdlePolicy, Policy, PolicyError, parse_policy

from .builders import PREFIX, TOPIC, attempt_name, job, request

PUT_METRIC_ALARM = (
    botocore.session.get_session().get_service_model("cloudwatch").operation_model("PutMetricAlarm").input_shape
)
CPU_ON = IdlePolicy(cpu_threshold_percent=5)
ALICE = "arn:aws:sts::123456789012:assumed-role/Debug/alice"
BOB = "arn:aws:sts::123456789012:assumed-role/Research/bob"
EXEMPTING = IdlePolicy(exempt_principals=("arn:aws:iam::123456789012:role/Debug",))


@pytest.mark.parametrize(
    ("instance_type", "cpu_only"),
    [
        ("ml.m5.xlarge", True),
        ("ml.c7i.48xlarge", True),
        ("ml.r5d.large", True),
        ("ml.t3.medium", True),
        ("ml.c6g.xlarge", True),
        ("ml.g5.xlarge", False),
        ("ml.g6e.12xlarge", False),
        ("ml.gr6.4xlarge", False),
        ("ml.p4de.24xlarge", False),
        ("ml.p5.48xlarge", False),
        ("ml.p6-b200.48xlarge", False),
        ("ml.trn1n.32xlarge", False),
        ("ml.inf2.xlarge", False),
        ("ml.dl1.24xlarge", False),
        ("not-a-type", False),
        ("ml..xlarge", False),
    ],
)
def test_gpu_series_are_known_and_everything_else_is_cpu_only(instance_type: str, cpu_only: bool) -> None:
    assert is_cpu_only(instance_type) is cpu_only


@pytest.mark.parametrize(
    ("resources", "policy", "metric"),
    [
        ({"InstanceType": "ml.m5.xlarge", "InstanceCount": 2}, CPU_ON, CPU_METRIC),
        ({"InstanceType": "ml.m5.xlarge", "InstanceCount": 2}, IdlePolicy(), GPU_METRIC),
        ({"InstanceType": "ml.g5.xlarge", "InstanceCount": 2}, CPU_ON, GPU_METRIC),
        ({"InstanceGroups": [{"InstanceType": "ml.c5.xlarge", "InstanceCount": 1},
                             {"InstanceType": "ml.m5.xlarge", "InstanceCount": 2}]}, CPU_ON, CPU_METRIC),
        ({"InstanceGroups": [{"InstanceType": "ml.c5.xlarge", "InstanceCount": 1},
                             {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2}]}, CPU_ON, GPU_METRIC),
        ({"InstancePreferences": [{"InstanceType": "ml.m5.xlarge"}]}, CPU_ON, GPU_METRIC),
        ({}, CPU_ON, GPU_METRIC),
    ],
)  # fmt: skip
def test_the_cpu_rule_watches_jobs_without_gpus_only_when_set(
    resources: dict[str, Any], policy: IdlePolicy, metric: str
) -> None:
    assert idle_metric(policy, instance_types({"ResourceConfig": resources})) == metric


def test_a_cpu_alarm_reads_cpu_utilization_of_every_host() -> None:
    puts = alarm_requests(PREFIX, "etl-0123abcd-1", 12, CPU_ON, TOPIC, metric=CPU_METRIC)

    for put in puts:
        validate_parameters(put, PUT_METRIC_ALARM)
    stats = [query["MetricStat"] for put in puts for query in put["Metrics"] if "MetricStat" in query]
    assert {stat["Metric"]["MetricName"] for stat in stats} == {"CPUUtilization"}
    assert {stat["Metric"]["Namespace"] for stat in stats} == {"/aws/sagemaker/TrainingJobs"}
    assert len(stats) == 12
    with pytest.raises(ValueError):
        alarm_requests(PREFIX, "etl-0123abcd-1", 1, IdlePolicy(), TOPIC, metric=CPU_METRIC)
    assert puts[0]["Threshold"] == 5.0
    assert puts[0]["AlarmDescription"].startswith(
        "every host at or below 5% CPU utilization for 3 consecutive periods of 300 s"
    )


def test_a_job_without_gpus_is_watched_on_its_cpus_and_stopped_as_idle_cpu() -> None:
    cpu_request = request(ResourceConfig={"InstanceType": "ml.m5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 50})
    action = watch(PREFIX, "etl-1", cpu_request, queued=True, policy=Policy(idle=CPU_ON), topic_arn=TOPIC)
    assert isinstance(action, PutIdleAlarms)
    assert action.reason.startswith("watching for idle CPUs: every host at or below 5% CPU utilization")

    notification = parse_notification(PREFIX, _message(action.requests[0]))
    assert notification is not None and notification.metric == CPU_METRIC
    running = job(stored_request=cpu_request)
    notification = parse_notification(PREFIX, _message(action.requests[0], attempt_name(running)))
    assert notification is not None
    [stop] = decide_idle(notification, job=running, policy=Policy(idle=CPU_ON), part_states={})
    assert isinstance(stop, StopIdleJob)
    assert stop.reason.startswith("idle CPU: every host at or below 5% CPU utilization")


def _message(put: Any, training_job_name: str | None = None) -> dict[str, Any]:
    name = put["AlarmName"] if training_job_name is None else f"{PREFIX.value}{training_job_name}"
    return {"AlarmName": name, "AlarmDescription": put["AlarmDescription"], "NewStateValue": "ALARM",
            "NewStateReason": "Threshold Crossed", "StateChangeTime": "2024-05-01T12:30:00.000+0000",
            "Trigger": {"Metrics": put["Metrics"]}}  # fmt: skip


def exempt_request(value: str = "true") -> dict[str, Any]:
    return request(Tags=[{"Key": "project", "Value": "vision"}, {"Key": EXEMPT_TAG, "Value": value}])


@pytest.mark.parametrize(
    ("tags", "exempt"),
    [
        ([{"Key": EXEMPT_TAG, "Value": "true"}], True),
        ([{"Key": EXEMPT_TAG, "Value": "false"}], False),
        ([{"Key": "idle-exempt", "Value": "true"}], False),
        ([], False),
        (None, False),
    ],
)
def test_only_the_tag_set_to_true_exempts(tags: object, exempt: bool) -> None:
    assert is_exempt({"Tags": tags}) is exempt


def test_an_exempt_queued_job_gets_no_alarm_and_an_outside_job_cannot_exempt_itself() -> None:
    enforcing = Policy(idle=IdlePolicy(enforce_outside_queue=True))

    assert watch(PREFIX, "debug-1", exempt_request(), queued=True, policy=enforcing, topic_arn=TOPIC) is None
    assert isinstance(watch(PREFIX, "debug-1", exempt_request(), queued=False, policy=enforcing, topic_arn=TOPIC),
                      PutIdleAlarms)  # fmt: skip
    assert isinstance(watch(PREFIX, "debug-1", request(), queued=True, policy=enforcing, topic_arn=TOPIC),
                      PutIdleAlarms)  # fmt: skip


def test_an_alarm_of_an_exempt_job_never_stops_it() -> None:
    exempt = job(stored_request=exempt_request())
    put = alarm_requests(PREFIX, attempt_name(exempt), 1, IdlePolicy(), TOPIC)[0]
    notification = parse_notification(PREFIX, _message(put))
    assert notification is not None

    [delete] = decide_idle(notification, job=exempt, policy=Policy(), part_states={})

    assert isinstance(delete, DeleteIdleAlarms)
    assert delete.alarm_names == (put["AlarmName"],)
    assert EXEMPT_TAG in delete.reason


@pytest.mark.parametrize(
    ("tagged", "caller", "idle", "error", "field"),
    [
        (exempt_request(), ALICE, EXEMPTING, None, None),
        (exempt_request(), "arn:aws:iam::123456789012:role/Debug", EXEMPTING, None, None),
        (exempt_request(), BOB, EXEMPTING, AccessDenied, f"Tags.{EXEMPT_TAG}"),
        (exempt_request(), ALICE, IdlePolicy(), AccessDenied, f"Tags.{EXEMPT_TAG}"),
        (exempt_request("yes"), ALICE, EXEMPTING, InvalidRequest, f"Tags.{EXEMPT_TAG}"),
        (request(), BOB, IdlePolicy(), None, None),
    ],
)
def test_only_principals_the_policy_names_may_exempt_a_job(
    tagged: dict[str, Any], caller: str, idle: IdlePolicy, error: type[Exception] | None, field: str | None
) -> None:
    if error is None:
        check_exemption(tagged, caller, idle)
        return
    with pytest.raises(error) as raised:
        check_exemption(tagged, caller, idle)
    assert getattr(raised.value, "field", None) == field
    assert EXEMPT_TAG in str(raised.value)


def described(name: str, state: str = "ALARM", metric: str = GPU_METRIC) -> dict[str, Any]:
    """One MetricAlarms entry of a DescribeAlarms answer."""
    return {
        "AlarmName": name,
        "AlarmDescription": "every host at or below 1% GPU utilization for 3 consecutive periods of 300 s",
        "StateValue": state,
        "StateReason": "Threshold Crossed: 3 out of the last 3 datapoints were less than or equal to the threshold",
        "StateUpdatedTimestamp": datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
        "Metrics": [{"Id": "host1", "MetricStat": {"Metric": {"Namespace": "/aws/sagemaker/TrainingJobs",
                                                               "MetricName": metric}}}],
    }  # fmt: skip


def test_an_alarm_already_in_alarm_reads_as_its_notification() -> None:
    notification = notification_of_alarm(PREFIX, described("smq-idle-smq.vit-1.part-2-of-3", metric=CPU_METRIC))

    assert notification is not None
    assert notification.alarm == AlarmRef(PREFIX, "vit-1", 2, 3)
    assert (notification.state, notification.metric) == ("ALARM", CPU_METRIC)
    assert notification.changed_at == "2024-05-01T12:30:00+00:00"
    assert notification.description is not None and notification.state_reason is not None


@pytest.mark.parametrize("name", ["smq-idle-smq-2.vit-1", "someone-elses-alarm", "smq-idle-smq.bad_name"])
def test_other_alarms_are_not_read_as_notifications(name: str) -> None:
    assert notification_of_alarm(PREFIX, described(name)) is None


VALID = [
    ({"idle": {"cpu_threshold_percent": 5}}, IdlePolicy(cpu_threshold_percent=5.0)),
    ({"idle": {"cpu_threshold_percent": 0}}, IdlePolicy(cpu_threshold_percent=0.0)),
    ({"idle": {"cpu_threshold_percent": None}}, IdlePolicy()),
    ({"idle": {"exempt_principals": ["arn:aws:iam::123456789012:role/Debug", "*"]}},
     IdlePolicy(exempt_principals=("arn:aws:iam::123456789012:role/Debug", "*"))),
]  # fmt: skip


@pytest.mark.parametrize(("document", "expected"), VALID)
def test_the_idle_keys_parse(document: dict[str, Any], expected: IdlePolicy) -> None:
    assert parse_policy(document).idle == expected
    assert parse_policy({}).idle.cpu_threshold_percent is None
    assert parse_policy({}).idle.exempt_principals == ()


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"idle": {"cpu_threshold_percent": -1}}, "policy.idle.cpu_threshold_percent"),
        ({"idle": {"cpu_threshold_percent": 10**9}}, "policy.idle.cpu_threshold_percent"),
        ({"idle": {"cpu_threshold_percent": float("inf")}}, "policy.idle.cpu_threshold_percent"),
        ({"idle": {"cpu_threshold_percent": "5"}}, "policy.idle.cpu_threshold_percent"),
        ({"idle": {"cpu_threshold_percent": True}}, "policy.idle.cpu_threshold_percent"),
        ({"idle": {"exempt_principals": "arn:aws:iam::123456789012:role/Debug"}}, "policy.idle.exempt_principals"),
        ({"idle": {"exempt_principals": ["Debug"]}}, "policy.idle.exempt_principals[0]"),
        ({"idle": {"exempt_principals": [""]}}, "policy.idle.exempt_principals[0]"),
    ],
)
def test_bad_idle_keys_are_refused_by_name(document: dict[str, Any], path: str) -> None:
    with pytest.raises(PolicyError) as raised:
        parse_policy(document)
    assert raised.value.path == path
