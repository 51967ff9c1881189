"""Idle GPUs: alarms that cover every host (checked against botocore's own PutMetricAlarm shape),
their notifications, what those mean for a job, and the orphan sweep."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import botocore.session
import pytest
from botocore.validate import validate_parameters
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs.model import TRAINING_JOB_NAME_MAX
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.governance.actions import DeleteIdleAlarms, PutIdleAlarms, StopIdleJob
from smq_lambda.governance.idle import (
    STACK_NAME_MAX,
    AlarmPrefix,
    AlarmRef,
    IdleNotification,
    alarm_name,
    alarm_requests,
    decide_idle,
    orphaned,
    parse_alarm_name,
    stop_watching,
    watch,
)
from smq_lambda.governance.idle_notifications import parse_notification
from smq_lambda.governance.idle_scope import host_count
from smq_lambda.governance.policy import IdlePolicy, Policy

from .builders import PREFIX, TOPIC, attempt_name, job

PUT_METRIC_ALARM = (
    botocore.session.get_session().get_service_model("cloudwatch").operation_model("PutMetricAlarm").input_shape
)
IDLE = IdlePolicy()
JOB_NAMES = st.from_regex(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", fullmatch=True).filter(
    lambda name: len(name) <= TRAINING_JOB_NAME_MAX
)
"""SageMaker's name pattern allows any run of hyphens; its length limit is separate."""
STACK_NAMES = st.from_regex(rf"[a-zA-Z][-a-zA-Z0-9]{{0,{STACK_NAME_MAX - 1}}}", fullmatch=True)
STACK_PAIRS = STACK_NAMES.flatmap(
    lambda stack: st.tuples(st.just(stack), st.one_of(STACK_NAMES, STACK_NAMES.map(lambda more: f"{stack}-{more}")))
).filter(lambda pair: pair[0] != pair[1] and len(pair[1]) <= STACK_NAME_MAX)
"""Two stacks; often the second's name starts with the first's (`smq`, `smq-2`)."""
LONGEST = AlarmPrefix(f"smq-idle-{'s' * STACK_NAME_MAX}.")


def metric_stats(put: dict[str, Any]) -> list[dict[str, Any]]:
    return [query["MetricStat"] for query in put["Metrics"] if "MetricStat" in query]


def hosts_of(put: dict[str, Any]) -> list[str]:
    return [stat["Metric"]["Dimensions"][0]["Value"] for stat in metric_stats(put)]


@pytest.mark.parametrize("instances", [1, 2, 10, 11, 25, 101])
def test_every_request_is_valid_for_botocore(instances: int) -> None:
    for put in alarm_requests(PREFIX, "vit-0123abcd-1", instances, IDLE, TOPIC):
        validate_parameters(put, PUT_METRIC_ALARM)


def test_one_host_is_watched_directly() -> None:
    [put] = alarm_requests(PREFIX, "vit-0123abcd-1", 1, IDLE, TOPIC)

    assert put["AlarmName"] == "smq-idle-smq.vit-0123abcd-1"
    assert put["Metrics"] == [{
        "Id": "host1",
        "MetricStat": {"Metric": {"Namespace": "/aws/sagemaker/TrainingJobs", "MetricName": "GPUUtilization",
                                  "Dimensions": [{"Name": "Host", "Value": "vit-0123abcd-1/algo-1"}]},
                       "Period": 300, "Stat": "Maximum"},
        "ReturnData": True,
    }]  # fmt: skip
    assert (put["EvaluationPeriods"], put["DatapointsToAlarm"], put["Threshold"]) == (3, 3, 1.0)
    assert put["ComparisonOperator"] == "LessThanOrEqualToThreshold"
    assert put["TreatMissingData"] == "notBreaching"
    assert put["AlarmActions"] == [TOPIC]
    assert put["AlarmDescription"] == "every host at or below 1% GPU utilization for 3 consecutive periods of 300 s"


def test_several_hosts_are_watched_through_their_maximum() -> None:
    [put] = alarm_requests(PREFIX, "vit-0123abcd-1", 4, IdlePolicy(0.5, 60, 10), TOPIC)

    assert hosts_of(put) == [f"vit-0123abcd-1/algo-{host}" for host in range(1, 5)]
    assert [query["ReturnData"] for query in put["Metrics"]] == [False, False, False, False, True]
    assert put["Metrics"][-1]["Expression"] == "MAX([host1,host2,host3,host4])"
    assert {stat["Period"] for stat in metric_stats(put)} == {60}
    assert (put["EvaluationPeriods"], put["DatapointsToAlarm"], put["Threshold"]) == (10, 10, 0.5)


def test_more_than_ten_hosts_are_split_into_named_parts() -> None:
    puts = alarm_requests(PREFIX, "big", 25, IDLE, TOPIC)

    assert [put["AlarmName"] for put in puts] == [f"smq-idle-smq.big.part-{part}-of-3" for part in (1, 2, 3)]
    assert [len(hosts_of(put)) for put in puts] == [10, 10, 5]
    assert hosts_of(puts[2])[0] == "big/algo-21"
    assert "algo-21..algo-25 of 25 hosts" in puts[2]["AlarmDescription"]


@given(JOB_NAMES, st.integers(1, 250), st.integers(1, 12).map(lambda minutes: minutes * 60), st.integers(1, 5))
def test_the_alarms_cover_every_host_exactly_once(name: str, instances: int, period: int, periods: int) -> None:
    puts = alarm_requests(PREFIX, name, instances, IdlePolicy(1.0, period, periods), TOPIC)
    names = [put["AlarmName"] for put in puts]

    assert sorted(host for put in puts for host in hosts_of(put)) == sorted(
        f"{name}/algo-{host}" for host in range(1, instances + 1)
    )
    assert all(len(metric_stats(put)) <= 10 for put in puts)
    assert all(sum(query["ReturnData"] for query in put["Metrics"]) == 1 for put in puts)
    assert all(re.fullmatch(r"[a-z][a-zA-Z0-9_]*", query["Id"]) for put in puts for query in put["Metrics"])
    assert len(set(names)) == len(names) and all(len(alarm) <= 255 for alarm in names)
    assert all(alarm.startswith("smq-idle-smq.") for alarm in names)
    assert [parse_alarm_name(PREFIX, alarm) for alarm in names] == [
        AlarmRef(PREFIX, name, part, len(puts)) for part in range(1, len(puts) + 1)
    ]
    warnings = [AlarmRef(PREFIX, name, part, len(puts), warning=True).name for part in range(1, len(puts) + 1)]
    deleted = [name for delete in stop_watching(PREFIX, name, instances, "ended") for name in delete.alarm_names]
    assert deleted == names + warnings


@pytest.mark.parametrize(("name", "instances"), [("not_a_name", 1), ("x" * 64, 1), ("ok", 0)])
def test_alarms_are_only_built_for_real_jobs(name: str, instances: int) -> None:
    with pytest.raises(ValueError):
        alarm_requests(PREFIX, name, instances, IDLE, TOPIC)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("smq-idle-smq.vit-1", AlarmRef(PREFIX, "vit-1")),
        ("smq-idle-smq.vit-1.part-2-of-3", AlarmRef(PREFIX, "vit-1", 2, 3)),
        ("smq-idle-smq.", None),
        ("smq-idle-smq.vit_1", None),
        ("smq-idle-smq.vit-1.part-0-of-3", None),
        ("smq-idle-smq.vit-1.part-4-of-3", None),
        ("smq-idle-smq.vit-1.part-1-of-1", None),
        ("smq-idle-smq.vit-1.part-02-of-3", None),
        ("smq-idle-smq.vit-1.2-of-3", None),
        ("smq-idle-smq.vit-1.other", None),
        ("smq-idle-smq-2.vit-1", None),
        ("smq-idle-vit-1", None),
        ("vit-1GPUUtil", None),
    ],
)
def test_alarm_names_parse_back(name: str, expected: AlarmRef | None) -> None:
    assert parse_alarm_name(PREFIX, name) == expected


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"InstanceType": "ml.g5.xlarge", "InstanceCount": 4}, 4),
        ({"InstanceGroups": [{"InstanceType": "ml.g5.xlarge", "InstanceCount": 2},
                             {"InstanceType": "ml.c5.xlarge", "InstanceCount": 3}]}, 5),
        ({}, 1),
        ({"InstanceCount": "4"}, 1),
    ],
)  # fmt: skip
def test_host_count_counts_every_group(resources: dict[str, Any], expected: int) -> None:
    assert host_count({"ResourceConfig": resources}) == expected


def test_queued_jobs_are_always_watched_outside_jobs_when_enforced() -> None:
    two = {"ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2}}
    queued = watch(PREFIX, "vit-1", two, queued=True, policy=Policy(), topic_arn=TOPIC)
    outside = watch(PREFIX, "vit-1", two, queued=False, policy=Policy(), topic_arn=TOPIC)
    enforced = watch(PREFIX, "vit-1", two, queued=False,
                     policy=Policy(idle=IdlePolicy(enforce_outside_queue=True)), topic_arn=TOPIC)  # fmt: skip

    assert isinstance(queued, PutIdleAlarms)
    assert queued.requests == tuple(alarm_requests(PREFIX, "vit-1", 2, IDLE, TOPIC))
    assert queued.reason.startswith("watching for idle GPUs: every host at or below 1%")
    assert outside is None
    assert isinstance(enforced, PutIdleAlarms)


def cloudwatch_message(put: dict[str, Any], state: str = "ALARM") -> str:
    """The JSON CloudWatch publishes to SNS when `put`'s alarm changes state (its documented members)."""
    return json.dumps({
        "AlarmName": put["AlarmName"],
        "AlarmDescription": put["AlarmDescription"],
        "AWSAccountId": "123456789012",
        "AlarmConfigurationUpdatedTimestamp": "2024-05-01T12:00:00.000+0000",
        "NewStateValue": state,
        "NewStateReason": "Threshold Crossed: 3 out of the last 3 datapoints [0.0 (01/05/24 12:25:00), 0.0 "
                          "(01/05/24 12:20:00), 0.0 (01/05/24 12:15:00)] were less than or equal to the threshold "
                          "(1.0) (minimum 3 datapoints for OK -> ALARM transition).",
        "StateChangeTime": "2024-05-01T12:30:00.000+0000",
        "Region": "US East (N. Virginia)",
        "AlarmArn": f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{put['AlarmName']}",
        "OldStateValue": "OK",
        "OKActions": [],
        "AlarmActions": put["AlarmActions"],
        "InsufficientDataActions": [],
        "Trigger": {"Metrics": put["Metrics"], "EvaluationPeriods": put["EvaluationPeriods"],
                    "DatapointsToAlarm": put["DatapointsToAlarm"], "ComparisonOperator": put["ComparisonOperator"],
                    "Threshold": put["Threshold"], "TreatMissingData": put["TreatMissingData"],
                    "EvaluateLowSampleCountPercentile": ""},
    })  # fmt: skip


def notification_for(
    training_job_name: str, state: str = "ALARM", instances: int = 1, part: int = 1
) -> IdleNotification:
    put = alarm_requests(PREFIX, training_job_name, instances, IDLE, TOPIC)[part - 1]
    parsed = parse_notification(PREFIX, cloudwatch_message(put, state))
    assert parsed is not None
    return parsed


def test_a_notification_parses_back_to_its_training_job() -> None:
    parsed = notification_for("vit-0123abcd-1")

    assert parsed.alarm == AlarmRef(PREFIX, "vit-0123abcd-1")
    assert parsed.state == "ALARM"
    assert parsed.changed_at == "2024-05-01T12:30:00.000+0000"
    decoded = json.loads(cloudwatch_message(alarm_requests(PREFIX, "a", 1, IDLE, TOPIC)[0]))
    assert parse_notification(PREFIX, decoded) is not None


@pytest.mark.parametrize(
    "message",
    ["not json", "[]", "{}", json.dumps({"AlarmName": "someone-elses-alarm", "NewStateValue": "ALARM"}),
     json.dumps({"AlarmName": "smq-idle-smq.vit", "NewStateValue": None}), None, 42,
     json.dumps({"AlarmName": "smq-idle-smq-2.vit", "NewStateValue": "ALARM"}),
     json.dumps({"AlarmName": "smq-idle-vit", "NewStateValue": "ALARM"})],
)  # fmt: skip
def test_other_messages_are_not_idle_notifications(message: object) -> None:
    assert parse_notification(PREFIX, message) is None


RUNNING = job(JobState.RUNNING)
NAME = attempt_name(RUNNING)
ENFORCING = Policy(idle=IdlePolicy(enforce_outside_queue=True))


def test_an_idle_queued_job_is_stopped_with_the_rule_as_reason() -> None:
    [stop] = decide_idle(notification_for(NAME), job=RUNNING, policy=Policy(), part_states={})

    assert stop == StopIdleJob(
        NAME, "vit", 1,
        f"idle GPU: every host at or below 1% GPU utilization for 3 consecutive periods of 300 s "
        f"(CloudWatch alarm smq-idle-smq.{NAME}, 2024-05-01T12:30:00.000+0000)",
    )  # fmt: skip


@pytest.mark.parametrize("state", ["OK", "INSUFFICIENT_DATA"])
def test_only_the_alarm_state_acts(state: str) -> None:
    assert decide_idle(notification_for(NAME, state), job=RUNNING, policy=Policy(), part_states={}) == []


@pytest.mark.parametrize("state", [JobState.PREEMPTING, JobState.STOPPING])
def test_a_job_already_being_stopped_is_left_to_its_stop(state: JobState) -> None:
    stopping = job(state)

    assert decide_idle(notification_for(attempt_name(stopping)), job=stopping, policy=Policy(), part_states={}) == []


def test_a_notification_about_an_ended_attempt_deletes_its_alarm() -> None:
    ended = job(JobState.COMPLETED)
    requeued = job(JobState.RUNNING, past_outcomes=["preempted"])
    first_attempt = requeued.attempts[0].training_job_name

    [for_ended] = decide_idle(notification_for(attempt_name(ended)), job=ended, policy=Policy(), part_states={})
    [for_old] = decide_idle(notification_for(first_attempt), job=requeued, policy=Policy(), part_states={})

    assert for_ended == DeleteIdleAlarms((f"smq-idle-smq.{attempt_name(ended)}",), for_ended.reason)
    assert for_old.alarm_names == (f"smq-idle-smq.{first_attempt}",)
    assert "has ended" in for_old.reason


def test_outside_jobs_are_stopped_only_under_enforcement() -> None:
    [stop] = decide_idle(notification_for("notebook-job"), job=None, policy=ENFORCING, part_states={})
    [delete] = decide_idle(notification_for("notebook-job"), job=None, policy=Policy(), part_states={})

    assert isinstance(stop, StopIdleJob) and (stop.job_name, stop.attempt) == (None, None)
    assert delete.alarm_names == ("smq-idle-smq.notebook-job",)


PARTS = [f"smq-idle-smq.big.part-{part}-of-3" for part in (1, 2, 3)]


@pytest.mark.parametrize(
    ("others", "stops"),
    [
        ({PARTS[0]: "ALARM", PARTS[2]: "ALARM"}, True),
        ({PARTS[0]: "ALARM", PARTS[2]: "OK"}, False),
        ({PARTS[0]: "ALARM", PARTS[2]: "INSUFFICIENT_DATA"}, False),
        ({PARTS[0]: "ALARM"}, False),
        ({}, False),
    ],
)
def test_a_job_of_several_alarms_stops_when_every_part_is_idle(others: dict[str, str], stops: bool) -> None:
    notification = notification_for("big", instances=25, part=2)

    actions = decide_idle(notification, job=None, policy=ENFORCING, part_states=others)

    assert [type(action) for action in actions] == ([StopIdleJob] if stops else [])


def test_without_a_description_the_reason_quotes_cloudwatch() -> None:
    notification = replace(notification_for(NAME), description=None)

    [stop] = decide_idle(notification, job=RUNNING, policy=Policy(), part_states={})

    assert isinstance(stop, StopIdleJob)
    assert stop.reason.startswith(f"idle GPU: CloudWatch alarm smq-idle-smq.{NAME} fired, "
                                  "2024-05-01T12:30:00.000+0000: Threshold Crossed")  # fmt: skip


def test_orphans_are_the_prefixed_alarms_no_watched_job_owns() -> None:
    names = ["smq-idle-smq.live-1", "smq-idle-smq.gone-1", "smq-idle-smq.big.part-1-of-2",
             "smq-idle-smq.big.part-2-of-2", "smq-idle-smq.bad_name", "someone-elses-alarm",
             "smq-idle-smq.live-1.part-9-of-2", "smq-idle-smq-2.gone-1", "smq-idle-gone-1"]  # fmt: skip

    [delete] = orphaned(PREFIX, names, {"live-1", "big"})

    assert delete.alarm_names == ("smq-idle-smq.bad_name", "smq-idle-smq.gone-1", "smq-idle-smq.live-1.part-9-of-2")
    assert orphaned(PREFIX, names[:1], {"live-1"}) == []


def test_orphans_are_deleted_a_hundred_at_a_time() -> None:
    deletes = orphaned(PREFIX, [f"smq-idle-smq.gone-{number}" for number in range(250)], set())

    assert [len(delete.alarm_names) for delete in deletes] == [100, 100, 50]
    assert len({name for delete in deletes for name in delete.alarm_names}) == 250


@pytest.mark.parametrize(
    ("prefix", "valid"),
    [
        ("smq-idle-smq.", True),
        ("smq-idle-Team-A-2.", True),
        (LONGEST.value, True),
        ("smq-idle-", False),
        ("smq-idle-smq", False),
        ("smq-idle-2smq.", False),
        ("smq-idle-smq.x.", False),
        (f"smq-idle-{'s' * (STACK_NAME_MAX + 1)}.", False),
        ("idle-smq.", False),
    ],
)
def test_a_prefix_is_smq_idle_and_one_stack_name(prefix: str, valid: bool) -> None:
    if valid:
        assert AlarmPrefix(prefix).value == prefix
    else:
        with pytest.raises(ValueError):
            AlarmPrefix(prefix)


def test_the_longest_stack_and_job_names_fit_cloudwatchs_255() -> None:
    job_name = "j" * TRAINING_JOB_NAME_MAX

    for put in alarm_requests(LONGEST, job_name, 250, IDLE, TOPIC):
        validate_parameters(put, PUT_METRIC_ALARM)
    parts = 10**22 - 1  # AlarmPrefix's bound: more parts than any training job has hosts
    assert len(alarm_name(LONGEST, job_name, parts, parts)) <= 255


@given(STACK_PAIRS, st.lists(JOB_NAMES, min_size=1, max_size=4, unique=True), st.integers(1, 25), st.data())
def test_a_stacks_sweep_never_deletes_another_stacks_alarm(
    stacks: tuple[str, str], jobs: list[str], instances: int, data: st.DataObject
) -> None:
    first, second = (AlarmPrefix(f"smq-idle-{stack}.") for stack in stacks)
    names = {
        prefix: {put["AlarmName"] for job in jobs for put in alarm_requests(prefix, job, instances, IDLE, TOPIC)}
        for prefix in (first, second)
    }
    listed = sorted(names[first] | names[second])

    for mine, theirs in [(first, second), (second, first)]:
        watched = data.draw(st.sets(st.sampled_from(jobs)))
        deleted = {name for delete in orphaned(mine, listed, watched) for name in delete.alarm_names}

        assert deleted.isdisjoint(names[theirs])
        assert deleted == {name for name in names[mine] if name.split(".")[1] not in watched}
        assert all(parse_alarm_name(mine, name) is None for name in names[theirs])
