"""What an idle alarm says when it fires, read two ways: CloudWatch's notification (the JSON message
it publishes to SNS, which the idle-stop function receives), and the alarm itself found in ALARM by
reconciliation (a DescribeAlarms entry), so a notification the idle-stop function failed on for good
is acted on all the same: an alarm already in ALARM does not notify again while the job stays idle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from smq_lambda.governance.idle import AlarmPrefix, IdleNotification, parse_alarm_name
from smq_lambda.governance.idle_scope import metric_of
from smq_lambda.governance.untyped_fields import member


def parse_notification(prefix: AlarmPrefix, message: object) -> IdleNotification | None:
    """An SNS record's `Message` (the JSON text, or already decoded) as an IdleNotification; None for
    anything that is not the notification of one of this stack's idle alarms, which the handler
    logs and ignores."""
    if isinstance(message, str):
        try:
            message = json.loads(message)
        except ValueError:
            return None
    name, state = member(message, "AlarmName"), member(message, "NewStateValue")
    ref = parse_alarm_name(prefix, name) if isinstance(name, str) else None
    if ref is None or not isinstance(state, str):
        return None
    return IdleNotification(
        alarm=ref,
        state=state,
        description=_text(member(message, "AlarmDescription")),
        state_reason=_text(member(message, "NewStateReason")),
        changed_at=_text(member(message, "StateChangeTime")),
        metric=metric_of(member(member(message, "Trigger"), "Metrics")),
    )


def notification_of_alarm(prefix: AlarmPrefix, alarm: Mapping[str, Any]) -> IdleNotification | None:
    """A DescribeAlarms `MetricAlarms` entry as the notification its last state change sent; None
    for an alarm that is not one of this stack's idle alarms."""
    name, state = alarm.get("AlarmName"), alarm.get("StateValue")
    ref = parse_alarm_name(prefix, name) if isinstance(name, str) else None
    if ref is None or not isinstance(state, str):
        return None
    changed = alarm.get("StateUpdatedTimestamp")
    return IdleNotification(
        alarm=ref,
        state=state,
        description=_text(alarm.get("AlarmDescription")),
        state_reason=_text(alarm.get("StateReason")),
        changed_at=changed.isoformat() if isinstance(changed, datetime) else _text(changed),
        metric=metric_of(alarm.get("Metrics")),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
