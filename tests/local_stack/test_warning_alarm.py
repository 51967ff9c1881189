"""The local alarm evaluator on the low-utilization warning's alarms (`idle.warn_below_percent`):
evaluated as CloudWatch does (strictly below the threshold, over the warning's longer window), and
its notification read by the idle handler as a warning, not a stop."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from smq.local.alarm_evaluator import ALARM, OK, Evaluation, evaluate, notification
from smq_lambda.governance.idle import AlarmPrefix, alarm_requests
from smq_lambda.governance.idle_notifications import parse_notification
from smq_lambda.governance.policy import IdlePolicy

PERIOD = 300
PREFIX = AlarmPrefix("smq-idle-smq.")
WARNING = IdlePolicy(warn_below_percent=30.0, warn_evaluation_periods=4)


def warning_alarm(job: str, hosts: int = 1) -> dict[str, Any]:
    """The first warning alarm of `job` as DescribeAlarms returns it."""
    request = alarm_requests(PREFIX, job, hosts, WARNING, "arn:aws:sns:us-east-1:000000000000:idle", warning=True)[0]
    return {
        **request,
        "AlarmArn": f"arn:aws:cloudwatch:us-east-1:000000000000:alarm:{request['AlarmName']}",
        "AlarmConfigurationUpdatedTimestamp": datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        "StateValue": OK,
        "OKActions": [],
        "InsufficientDataActions": [],
    }


@pytest.mark.parametrize(
    ("case", "values", "state"),
    [
        ("low in the whole window", (12.0, 29.9, 0.5, 20.0), ALARM),
        ("at the threshold is not below it", (12.0, 30.0, 0.5, 20.0), OK),
        ("one busy period", (12.0, 95.0, 0.5, 20.0), OK),
        ("no data is not low use", (None, None, None, None), OK),
    ],
)
def test_the_warning_alarm_fires_only_below_its_threshold_for_its_whole_window(
    case: str, values: tuple[float | None, ...], state: str
) -> None:
    datapoints = [(index * PERIOD, value) for index, value in enumerate(values)]
    assert evaluate(warning_alarm("job"), datapoints).state == state, case


def test_its_notification_reaches_the_idle_handler_as_a_warning() -> None:
    alarm = warning_alarm("job-1", hosts=3)
    evaluation = Evaluation(ALARM, "Threshold Crossed")

    message = notification(
        alarm, evaluation, changed_at=datetime(2024, 5, 1, tzinfo=UTC), region="us-east-1", account="000000000000"
    )

    parsed = parse_notification(PREFIX, message)

    assert parsed is not None
    assert (parsed.alarm.training_job_name, parsed.alarm.warning, parsed.state) == ("job-1", True, ALARM)
