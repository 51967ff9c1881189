"""The idle-GPU alarms in CloudWatch (the IdleAlarms port).

Only names under the stack's AlarmPrefix are ever listed or touched: the IAM policy grants the
alarm actions on that prefix alone, and another stack's alarms in the same account and Region are
not this one's to list or delete. Every CloudWatch failure becomes an AlarmServiceError carrying its
code, logged here; callers treat alarms as best-effort and let the next report or reconciliation
try again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from smq_lambda.errors import AlarmServiceError
from smq_lambda.governance.idle import ALARM, MAX_NAMES_PER_DELETE, AlarmPrefix

logger = Logger(service="smq", child=True)

ALREADY_GONE_ERRORS = frozenset({"ResourceNotFound", "ResourceNotFoundException"})
"""DeleteAlarms naming an alarm that no longer exists: what the delete wanted."""
METRIC_ALARM = "MetricAlarm"


class CloudWatchIdleAlarms:
    def __init__(self, client: Any, prefix: AlarmPrefix) -> None:
        self._client = client
        self._prefix = prefix

    def put(self, requests: Collection[Mapping[str, Any]]) -> None:
        for request in requests:
            self._require_prefix([request["AlarmName"]])
            self._call("PutMetricAlarm", self._client.put_metric_alarm, **request)

    def delete(self, alarm_names: Collection[str]) -> None:
        names = sorted(alarm_names)
        if not names:
            return
        self._require_prefix(names)
        if len(names) > MAX_NAMES_PER_DELETE:
            raise ValueError(f"DeleteAlarms takes at most {MAX_NAMES_PER_DELETE} names, not {len(names)}")
        try:
            self._client.delete_alarms(AlarmNames=names)
        except ClientError as exc:
            if _code(exc) not in ALREADY_GONE_ERRORS:
                raise _alarm_error("DeleteAlarms", exc) from exc
            remaining = sorted(self.states(names))
            if remaining:
                self._call("DeleteAlarms", self._client.delete_alarms, AlarmNames=remaining)
        except BotoCoreError as exc:
            raise _alarm_error("DeleteAlarms", exc) from exc

    def names(self) -> list[str]:
        return sorted(alarm["AlarmName"] for alarm in self._describe(AlarmNamePrefix=self._prefix.value))

    def states(self, alarm_names: Collection[str]) -> dict[str, str]:
        names = sorted(alarm_names)
        if not names:
            return {}
        self._require_prefix(names)
        return {alarm["AlarmName"]: alarm.get("StateValue", "") for alarm in self._describe(AlarmNames=names)}

    def in_alarm(self) -> list[Mapping[str, Any]]:
        """CloudWatch applies both filters; moto (the local stack) ignores StateValue beside a name
        prefix, so the state is checked here too."""
        alarms = self._describe(AlarmNamePrefix=self._prefix.value, StateValue=ALARM)
        return [alarm for alarm in alarms if alarm.get("StateValue") == ALARM]

    def _describe(self, **selection: Any) -> list[Mapping[str, Any]]:
        """The metric alarms `selection` picks, every page read."""
        alarms: list[Mapping[str, Any]] = []
        try:
            for page in self._client.get_paginator("describe_alarms").paginate(AlarmTypes=[METRIC_ALARM], **selection):
                alarms += page.get("MetricAlarms", ())
        except (ClientError, BotoCoreError) as exc:
            raise _alarm_error("DescribeAlarms", exc) from exc
        return alarms

    def _call(self, operation: str, method: Any, **arguments: Any) -> None:
        try:
            method(**arguments)
        except (ClientError, BotoCoreError) as exc:
            raise _alarm_error(operation, exc) from exc

    def _require_prefix(self, names: Collection[str]) -> None:
        """A name outside the prefix is a bug here, never something to send (IAM would refuse it)."""
        outside = [name for name in names if not self._prefix.owns(name)]
        if outside:
            raise ValueError(f"not this stack's idle alarm names (prefix {self._prefix.value!r}): {outside}")


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code") or "Unknown")


def _alarm_error(operation: str, exc: ClientError | BotoCoreError) -> AlarmServiceError:
    if isinstance(exc, ClientError):
        code, message = _code(exc), str(exc.response.get("Error", {}).get("Message") or exc)
    else:
        code, message = type(exc).__name__, str(exc)
    logger.warning("CloudWatch alarm call failed", extra={"operation": operation, "code": code, "error": message})
    return AlarmServiceError(operation, code, message)
