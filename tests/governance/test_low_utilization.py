"""The low-utilization warning (`idle.warn_below_percent`): its policy keys and their bounds, its
alarms beside the idle-stop alarms, their names, and what their notifications mean (a warning to the
owner of a running queued job, once per attempt; never a stop)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import botocore.session
import pytest
from botocore.validate import validate_parameters
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.governance.actions import DeleteIdleAlarms, PutIdleAlarms, WarnLowUtilization
from smq_lambda.governance.idle import (
    AlarmRef,
    alarm_name,
    alarm_requests,
    decide_idle,
    orphaned,
    parse_alarm_name,
    stop_watching,
    watch,
)
from smq_lambda.governance.idle_notifications import IdleNotification, parse_notification
from smq_lambda.governance.policy import IdlePolicy, Policy, PolicyError, parse_policy

from .builders import NOW, PREFIX, TOPIC, attempt_name, job, request
from .test_idle import cloudwatch_message

WARNING = IdlePolicy(warn_below_percent=30.0)
WARN = Policy(idle=WARNING)
RUNNING = job(JobState.RUNNING)
NAME = attempt_name(RUNNING)
JOB_NAMES = st.from_regex(r"[a-zA-Z0-9](-?[a-zA-Z0-9]){0,40}", fullmatch=True)


def test_the_warning_is_off_by_default_and_set_by_its_keys() -> None:
    assert parse_policy({}).idle.warn_below_percent is None
    idle = parse_policy({"idle": {"warn_below_percent": 30, "warn_evaluation_periods": 24}}).idle
    assert (idle.warn_below_percent, idle.warn_evaluation_periods) == (30.0, 24)
    assert parse_policy({"idle": {"warn_below_percent": 30}}).idle.warn_evaluation_periods == 12


@pytest.mark.parametrize(
    ("idle", "key"),
    [
        ({"warn_below_percent": "30"}, "policy.idle.warn_below_percent"),
        ({"warn_below_percent": True}, "policy.idle.warn_below_percent"),
        ({"warn_below_percent": 1}, "policy.idle.warn_below_percent"),
        ({"warn_below_percent": 0.5}, "policy.idle.warn_below_percent"),
        ({"warn_below_percent": 1601}, "policy.idle.warn_below_percent"),
        ({"warn_below_percent": 10**400}, "policy.idle.warn_below_percent"),
        ({"warn_below_percent": 30, "warn_evaluation_periods": 3}, "policy.idle.warn_evaluation_periods"),
        ({"warn_below_percent": 30, "warn_evaluation_periods": 289}, "policy.idle.warn_evaluation_periods"),
        ({"warn_evaluation_periods": 0}, "policy.idle.warn_evaluation_periods"),
        ({"warn_evaluation_periods": 1.5}, "policy.idle.warn_evaluation_periods"),
    ],
)
def test_an_unusable_warning_is_refused_naming_its_key(idle: dict[str, Any], key: str) -> None:
    with pytest.raises(PolicyError) as refused:
        parse_policy({"idle": idle})
    assert refused.value.path == key


def test_the_warning_alarm_watches_a_longer_window_below_its_own_threshold() -> None:
    (put,) = alarm_requests(PREFIX, "vit-1", 1, WARNING, TOPIC, warning=True)
    (stop,) = alarm_requests(PREFIX, "vit-1", 1, WARNING, TOPIC)

    assert put["AlarmName"] == "smq-idle-smq.vit-1.low"
    assert (put["Threshold"], put["ComparisonOperator"]) == (30.0, "LessThanThreshold")
    assert (put["EvaluationPeriods"], put["DatapointsToAlarm"]) == (12, 12)
    assert put["Metrics"] == stop["Metrics"] and put["AlarmActions"] == [TOPIC]
    assert put["AlarmDescription"] == "every host below 30% GPU utilization for 12 consecutive periods of 300 s"
    validate_parameters(put, botocore.session.get_session().get_service_model("cloudwatch")
                        .operation_model("PutMetricAlarm").input_shape)  # fmt: skip


def test_a_warning_needs_a_configured_threshold() -> None:
    with pytest.raises(ValueError, match="warn_below_percent"):
        alarm_requests(PREFIX, "vit-1", 1, IdlePolicy(), TOPIC, warning=True)


def test_queued_jobs_get_the_warning_alarms_and_outside_jobs_do_not() -> None:
    queued = watch(PREFIX, "vit-1", request(), queued=True, policy=WARN, topic_arn=TOPIC)
    enforced = Policy(idle=replace(WARNING, enforce_outside_queue=True))
    outside = watch(PREFIX, "by-hand", request(), queued=False, policy=enforced, topic_arn=TOPIC)

    assert isinstance(queued, PutIdleAlarms) and isinstance(outside, PutIdleAlarms)
    assert [put["AlarmName"] for put in queued.requests] == ["smq-idle-smq.vit-1", "smq-idle-smq.vit-1.low"]
    assert [put["AlarmName"] for put in outside.requests] == ["smq-idle-smq.by-hand"]


def test_an_ended_attempt_loses_its_warning_alarms_too() -> None:
    names = {name for action in stop_watching(PREFIX, "vit-1", 12, "ended") for name in action.alarm_names}
    assert {alarm_name(PREFIX, "vit-1", part, 2, warning=True) for part in (1, 2)} <= names


@given(name=JOB_NAMES, parts=st.integers(1, 30), warning=st.booleans(), data=st.data())
def test_warning_and_stop_alarm_names_parse_back_and_never_meet(
    name: str, parts: int, warning: bool, data: st.DataObject
) -> None:
    ref = AlarmRef(PREFIX, name, data.draw(st.integers(1, parts)), parts, warning=warning)

    assert parse_alarm_name(PREFIX, ref.name) == ref
    assert replace(ref, warning=not warning).name != ref.name
    assert orphaned(PREFIX, [ref.name], {name}) == []


def warning_notification(training_job_name: str, state: str = "ALARM", instances: int = 1) -> IdleNotification:
    put = alarm_requests(PREFIX, training_job_name, instances, WARNING, TOPIC, warning=True)[0]
    parsed = parse_notification(PREFIX, cloudwatch_message(put, state))
    assert parsed is not None and parsed.alarm.warning
    return parsed


def test_a_running_job_is_warned_with_the_rule_as_reason_never_stopped() -> None:
    [warn] = decide_idle(warning_notification(NAME), job=RUNNING, policy=WARN, part_states={})

    assert isinstance(warn, WarnLowUtilization)
    assert (warn.training_job_name, warn.job_name, warn.attempt) == (NAME, "vit", 1)
    assert warn.reason.startswith(
        "low GPU utilization: every host below 30% GPU utilization for 12 consecutive periods of 300 s "
        f"(CloudWatch alarm {alarm_name(PREFIX, NAME, warning=True)}, 2024-05-01T12:30:00.000+0000)"
    )


WARNED = lifecycle.warn_low_utilization(RUNNING, NOW, reason="warned")


@pytest.mark.parametrize(
    ("case", "queued", "policy", "part_states", "expected"),
    [
        ("warned already this attempt", WARNED, WARN, {}, []),
        ("another part still busy", RUNNING, WARN, {"part-2": "OK"}, []),
        ("being stopped", job(JobState.STOPPING), WARN, {}, []),
        ("warnings turned off", RUNNING, Policy(), {}, [DeleteIdleAlarms]),
        ("outside the queue", None, Policy(idle=replace(WARNING, enforce_outside_queue=True)), {}, [DeleteIdleAlarms]),
    ],
)
def test_when_no_warning_is_sent(
    case: str, queued: Any, policy: Policy, part_states: dict[str, str], expected: list[type]
) -> None:
    instances = 12 if part_states else 1
    notification = warning_notification(NAME, instances=instances)
    states = {alarm_name(PREFIX, NAME, 2, 2, warning=True): state for state in part_states.values()}

    decided = decide_idle(notification, job=queued, policy=policy, part_states=states)

    assert [type(action) for action in decided] == expected, case


def test_only_the_alarm_state_warns() -> None:
    assert decide_idle(warning_notification(NAME, "OK"), job=RUNNING, policy=WARN, part_states={}) == []


def test_the_warning_is_recorded_on_the_attempt_and_in_the_history() -> None:
    attempt = WARNED.current_attempt
    assert attempt is not None and attempt.warned_at == NOW
    assert (WARNED.state, WARNED.version, WARNED.history[-1].what) == (JobState.RUNNING, RUNNING.version + 1, "warned")
