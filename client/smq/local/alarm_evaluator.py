"""CloudWatch's alarm evaluation, for the local stack.

moto stores alarms and metric data but never evaluates an alarm, so none would ever fire. This
evaluates the metric alarms whose names start with a prefix (the idle alarms, on `GPUUtilization`
or, under the CPU rule, `CPUUtilization`: whatever metric their queries name) the way
CloudWatch does, sets their state, and performs their SNS actions by publishing CloudWatch's alarm
notification to the topic: the same path as in AWS (alarm → SNS topic → subscribed function).

It implements what those alarms use: metric-math alarms whose `MetricStat` queries are read with
GetMetricData and whose returned query is one of them or `MAX([id, ...])` over them (moto's
GetMetricData does not compute expressions), the four threshold comparisons, `DatapointsToAlarm`
out of `EvaluationPeriods` of the most recent complete periods, and `TreatMissingData`.

`period_seconds` replaces every query's `Period` when the data is read, so an alarm can fire within
seconds locally (CloudWatch allows 10 s at the least, 60 s for these metrics); the alarm definitions
keep the policy's period, and a notification reports it. None: each alarm's own period, as in AWS.
"""

from __future__ import annotations

import json
import logging
import operator
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from botocore.loaders import create_loader

log = logging.getLogger("smq.local.alarms")

ALARM, OK, INSUFFICIENT_DATA = "ALARM", "OK", "INSUFFICIENT_DATA"
ACTIONS_OF_STATE = {ALARM: "AlarmActions", OK: "OKActions", INSUFFICIENT_DATA: "InsufficientDataActions"}
COMPARISONS: dict[str, tuple[Callable[[float, float], bool], str]] = {
    "GreaterThanOrEqualToThreshold": (operator.ge, "greater than or equal to"),
    "GreaterThanThreshold": (operator.gt, "greater than"),
    "LessThanThreshold": (operator.lt, "less than"),
    "LessThanOrEqualToThreshold": (operator.le, "less than or equal to"),
}
MAX_EXPRESSION = re.compile(r"MAX\(\[\s*(\w+(?:\s*,\s*\w+)*)\s*\]\)")
EVALUATE_EVERY_SECONDS = 60.0
"""Without a period override: CloudWatch evaluates alarms about once a minute."""
SUBJECT_LIMIT = 100
"""The longest subject SNS accepts."""


class UnsupportedAlarm(ValueError):
    """An alarm this evaluator cannot evaluate (a single-metric alarm, another expression)."""


@dataclass(frozen=True)
class Evaluation:
    """The state an alarm is in now, and the reason CloudWatch would record for it."""

    state: str
    reason: str


def evaluate(alarm: Mapping[str, Any], datapoints: Sequence[tuple[int, float | None]]) -> Evaluation:
    """The state `alarm` is in, given the value of its watched series in each of its last
    `EvaluationPeriods` periods: (period start in epoch seconds, value or None when missing)."""
    if alarm["ComparisonOperator"] not in COMPARISONS:
        raise UnsupportedAlarm(f"{alarm['AlarmName']}: comparison {alarm['ComparisonOperator']}")
    compare, words = COMPARISONS[alarm["ComparisonOperator"]]
    threshold = float(alarm["Threshold"])
    treat_missing = alarm.get("TreatMissingData") or "missing"
    needed = alarm.get("DatapointsToAlarm") or alarm["EvaluationPeriods"]
    present = [(start, value) for start, value in datapoints if value is not None]
    missing = len(datapoints) - len(present)
    if not present and treat_missing in ("missing", "ignore"):
        state = INSUFFICIENT_DATA if treat_missing == "missing" else alarm["StateValue"]
        return Evaluation(state, f"no datapoints were received for {missing} periods")
    breaching = sum(1 for _, value in present if compare(value, threshold))
    if treat_missing == "breaching":
        breaching += missing
    shown = ", ".join(f"{value:g} ({_short_time(start)})" for start, value in present)
    reason = (
        f"Threshold Crossed: {breaching} out of the last {len(datapoints)} datapoints [{shown}] "
        f"{'was' if breaching == 1 else 'were'} {words} the threshold ({threshold:g})"
    )
    if missing:
        reason += f"; {missing} missing datapoints were treated as {treat_missing}"
    state = ALARM if breaching >= needed else OK
    return Evaluation(state, f"{reason} (minimum {needed} datapoints for {alarm['StateValue']} -> {state} transition).")


def watched_series(alarm: Mapping[str, Any], series: Mapping[str, Mapping[int, float]]) -> dict[int, float]:
    """The series the alarm compares with its threshold, from its MetricStat queries' `series`
    (query id → period start → value)."""
    returned = [query for query in alarm.get("Metrics", ()) if query.get("ReturnData", True)]
    if len(returned) != 1:
        raise UnsupportedAlarm(f"{alarm['AlarmName']}: not a metric-math alarm returning one series")
    (query,) = returned
    if "MetricStat" in query:
        return dict(series[query["Id"]])
    match = MAX_EXPRESSION.fullmatch(query.get("Expression", ""))
    if match is None:
        raise UnsupportedAlarm(f"{alarm['AlarmName']}: expression {query.get('Expression')!r} is not MAX([...])")
    ids = [name.strip() for name in match.group(1).split(",")]
    starts = {start for name in ids for start in series[name]}
    return {start: max(series[name][start] for name in ids if start in series[name]) for start in starts}


def notification(
    alarm: Mapping[str, Any], evaluation: Evaluation, *, changed_at: datetime, region: str, account: str
) -> dict[str, Any]:
    """The JSON message CloudWatch publishes to an alarm action's SNS topic."""
    return {
        "AlarmName": alarm["AlarmName"],
        "AlarmDescription": alarm.get("AlarmDescription"),
        "AWSAccountId": account,
        "AlarmConfigurationUpdatedTimestamp": _time(alarm["AlarmConfigurationUpdatedTimestamp"]),
        "NewStateValue": evaluation.state,
        "NewStateReason": evaluation.reason,
        "StateChangeTime": _time(changed_at),
        "Region": region_name(region),
        "AlarmArn": alarm["AlarmArn"],
        "OldStateValue": alarm["StateValue"],
        "OKActions": alarm.get("OKActions", []),
        "AlarmActions": alarm.get("AlarmActions", []),
        "InsufficientDataActions": alarm.get("InsufficientDataActions", []),
        "Trigger": {
            "Period": own_period(alarm),
            "EvaluationPeriods": alarm["EvaluationPeriods"],
            "DatapointsToAlarm": alarm.get("DatapointsToAlarm") or alarm["EvaluationPeriods"],
            "ComparisonOperator": alarm["ComparisonOperator"],
            "Threshold": alarm["Threshold"],
            "TreatMissingData": alarm.get("TreatMissingData") or "missing",
            "EvaluateLowSampleCountPercentile": "",
            "Metrics": [_trigger_query(query) for query in alarm["Metrics"]],
        },
    }


def subject(alarm_name: str, state: str, region: str) -> str:
    return f'{state}: "{alarm_name}" in {region_name(region)}'[:SUBJECT_LIMIT]


@cache
def region_name(region: str) -> str:
    """The Region's name as CloudWatch writes it in notifications ("US East (N. Virginia)")."""
    for partition in create_loader().load_data("endpoints")["partitions"]:
        if region in partition["regions"]:
            return str(partition["regions"][region]["description"])
    return region


class AlarmEvaluator:
    """Evaluates the alarms named `name_prefix`... every period on its own thread, until `shutdown`."""

    def __init__(
        self,
        cloudwatch: Any,
        sns: Any,
        *,
        name_prefix: str,
        period_seconds: int | None,
        region: str,
        account: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._cloudwatch = cloudwatch
        self._sns = sns
        self._prefix = name_prefix
        self._period = period_seconds
        self._region = region
        self._account = account
        self._clock = clock
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._evaluate_forever, name="smq-alarm-evaluator", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def shutdown(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def evaluate_alarms(self) -> None:
        """One evaluation of every alarm under the prefix; an alarm that cannot be evaluated is
        logged and the others still are."""
        for alarm in self._alarms():
            try:
                self._evaluate(alarm)
            except UnsupportedAlarm as exc:
                log.warning("cannot evaluate alarm: %s", exc)
            except (BotoCoreError, ClientError):
                log.warning("could not evaluate alarm %s", alarm["AlarmName"], exc_info=True)

    def _evaluate_forever(self) -> None:
        while not self._stopping.wait(self._period or EVALUATE_EVERY_SECONDS):
            try:
                self.evaluate_alarms()
            except (BotoCoreError, ClientError):
                log.warning("could not list the alarms to evaluate", exc_info=True)

    def _alarms(self) -> Iterator[dict[str, Any]]:
        for page in self._cloudwatch.get_paginator("describe_alarms").paginate(
            AlarmNamePrefix=self._prefix, AlarmTypes=["MetricAlarm"]
        ):
            yield from page.get("MetricAlarms", ())

    def _evaluate(self, alarm: dict[str, Any]) -> None:
        period = self._period or own_period(alarm)
        end = int(self._clock() // period) * period
        starts = [end - period * back for back in range(alarm["EvaluationPeriods"], 0, -1)]
        series = watched_series(alarm, self._read(alarm, period, starts[0], end))
        evaluation = evaluate(alarm, [(start, series.get(start)) for start in starts])
        if evaluation.state == alarm["StateValue"]:
            return
        self._cloudwatch.set_alarm_state(
            AlarmName=alarm["AlarmName"],
            StateValue=evaluation.state,
            StateReason=evaluation.reason,
            StateReasonData=json.dumps({"version": "1.0", "period": period, "threshold": alarm["Threshold"]}),
        )
        log.info("alarm %s: %s -> %s", alarm["AlarmName"], alarm["StateValue"], evaluation.state)
        if alarm.get("ActionsEnabled", True):
            self._notify(alarm, evaluation)

    def _read(self, alarm: Mapping[str, Any], period: int, start: int, end: int) -> dict[str, dict[int, float]]:
        """Each MetricStat query's values by period start, read over `period`-second periods."""
        queries = [
            {"Id": query["Id"], "MetricStat": {**query["MetricStat"], "Period": period}, "ReturnData": True}
            for query in metric_stats(alarm)
        ]
        answer = self._cloudwatch.get_metric_data(
            MetricDataQueries=queries,
            StartTime=datetime.fromtimestamp(start, UTC),
            EndTime=datetime.fromtimestamp(end, UTC),
        )
        series: dict[str, dict[int, float]] = {query["Id"]: {} for query in queries}
        for result in answer["MetricDataResults"]:
            points = zip(result["Timestamps"], result["Values"], strict=True)
            series[result["Id"]] = {round(stamp.timestamp()): value for stamp, value in points}
        return series

    def _notify(self, alarm: Mapping[str, Any], evaluation: Evaluation) -> None:
        message = notification(
            alarm, evaluation, changed_at=datetime.now(UTC), region=self._region, account=self._account
        )
        for action in alarm.get(ACTIONS_OF_STATE[evaluation.state], ()):
            if not action.startswith("arn:aws:sns:"):
                log.warning("alarm %s: only SNS actions run locally, not %s", alarm["AlarmName"], action)
                continue
            self._sns.publish(
                TopicArn=action,
                Subject=subject(alarm["AlarmName"], evaluation.state, self._region),
                Message=json.dumps(message),
            )


def metric_stats(alarm: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The alarm's MetricStat queries: the metrics it reads."""
    queries = [query for query in alarm.get("Metrics", ()) if "MetricStat" in query]
    if not queries:
        raise UnsupportedAlarm(f"{alarm['AlarmName']}: not a metric-math alarm")
    return queries


def own_period(alarm: Mapping[str, Any]) -> int:
    """The period the alarm's definition evaluates over (its queries share it)."""
    return int(metric_stats(alarm)[0]["MetricStat"]["Period"])


def _trigger_query(query: Mapping[str, Any]) -> dict[str, Any]:
    """A query as a notification's Trigger shows it (dimension members in lower case)."""
    if "MetricStat" not in query:
        return dict(query)
    metric = query["MetricStat"]["Metric"]
    dimensions = [{"value": item["Value"], "name": item["Name"]} for item in metric.get("Dimensions", ())]
    return {**query, "MetricStat": {**query["MetricStat"], "Metric": {**metric, "Dimensions": dimensions}}}


def _time(moment: datetime) -> str:
    """2024-05-01T12:00:00.000+0000, CloudWatch's notification timestamps."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}+0000"


def _short_time(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%d/%m/%y %H:%M:%S")
