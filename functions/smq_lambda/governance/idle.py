"""Idle GPUs (or CPUs, see idle_scope.py): the CloudWatch alarms that watch every host of a training
job, and what their notifications mean.

SageMaker publishes `GPUUtilization` per host in `/aws/sagemaker/TrainingJobs`, dimension `Host` =
`<training-job-name>/algo-<n>`, n = 1..instances (every group counted). A job is idle when *every*
host is: one busy host keeps it running. Each host's metric is read as its Maximum over the period
(one busy minute is not idle), and the alarm watches the MAX across hosts, at or below the threshold
for `evaluation_periods` periods out of as many. Missing data is not breaching: no datapoint is no
evidence of idleness (a job just reaching `Training`), so only real idle datapoints stop a job.

Every name starts with the stack's AlarmPrefix, `smq-idle-<stack name>.`, so two stacks in one
account and Region never list, sweep or act on each other's alarms. A metric-math alarm reads at
most 10 metrics, so a job of more than 10 hosts gets one alarm per 10 hosts
(`<prefix><job>.part-<k>-of-<n>`), each notifying; a notification stops the job only when
every part is in ALARM, which the handler reads back (DescribeAlarms). Composite alarms would do
this in CloudWatch, but PutCompositeAlarm must be allowed on `*` (CloudWatch refuses a narrower
scope), and the queue's alarm permissions stay scoped to the stack's prefix.

With `idle.warn_below_percent` set, a queued job also gets warning alarms (`<prefix><job>.low`, in
parts as above: `<prefix><job>.low.part-<k>-of-<n>`) over a longer span: when every part is in
ALARM the owner is told of low utilization, once per attempt, and the job runs on.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smq_lambda.domain.jobs.model import TRAINING_JOB_NAME_PATTERN, Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.governance.actions import (
    DeleteIdleAlarms,
    GovernanceAction,
    PutIdleAlarms,
    StopIdleJob,
    WarnLowUtilization,
)
from smq_lambda.governance.idle_scope import (
    CPU_METRIC,
    GPU_METRIC,
    host_count,
    idle_metric,
    instance_types,
    is_exempt,
    resource_of,
)
from smq_lambda.governance.policy import IdlePolicy, Policy

NAMESPACE = "/aws/sagemaker/TrainingJobs"
HOST_DIMENSION = "Host"
MAX_HOSTS_PER_ALARM = 10
"""CloudWatch's hard limit on the metrics one metric-math alarm reads."""
MAX_NAMES_PER_DELETE = 100
"""What one DeleteAlarms call takes."""
ALARM = "ALARM"
PART_SEPARATOR = "."
"""Not allowed in training job names, so `<job>.part-...` never reads as another job's name."""
WARNING_MARK = "low"
"""`<job>.low...`: a low-utilization warning alarm, not a stop alarm."""
STACK_NAME_MAX = 128
"""CloudFormation's limit on a stack name."""
_ALARM_PREFIX = re.compile(rf"smq-idle-[a-zA-Z][-a-zA-Z0-9]{{0,{STACK_NAME_MAX - 1}}}\.")


@dataclass(frozen=True)
class AlarmPrefix:
    """What every idle alarm name of one smq stack starts with: `smq-idle-<stack name>.`, the
    template's SMQ_IDLE_ALARM_PREFIX. The IAM policies, the listing and the orphan sweep rely on it.

    Stack names (`[a-zA-Z][-a-zA-Z0-9]*`) hold no `.`, so the first `.` ends the stack name and no
    stack's prefix starts another stack's alarm names (`smq-idle-a.` is not a prefix of
    `smq-idle-a-b.<job>`). The longest name fits CloudWatch's 255: 138 for the prefix (a stack name
    is at most 128), 63 for the job, and `.part-<k>-of-<n>`, 10 + 2 digits of n, for any n below
    10^22 parts.
    """

    value: str

    def __post_init__(self) -> None:
        if not _ALARM_PREFIX.fullmatch(self.value):
            raise ValueError(f"{self.value!r} is not an idle alarm prefix (smq-idle-<stack name>.)")

    def owns(self, alarm_name: str) -> bool:
        return alarm_name.startswith(self.value)


@dataclass(frozen=True)
class AlarmRef:
    """Which training job, and which part of its hosts, an idle alarm of one stack watches."""

    prefix: AlarmPrefix
    training_job_name: str
    part: int = 1
    parts: int = 1
    warning: bool = False
    """A low-utilization warning alarm (`idle.warn_below_percent`) rather than a stop alarm."""

    @property
    def name(self) -> str:
        return alarm_name(self.prefix, self.training_job_name, self.part, self.parts, warning=self.warning)

    def all_names(self) -> list[str]:
        """The names of every alarm of the same job and rule (this one included)."""
        return [
            alarm_name(self.prefix, self.training_job_name, part, self.parts, warning=self.warning)
            for part in range(1, self.parts + 1)
        ]


def alarm_name(
    prefix: AlarmPrefix, training_job_name: str, part: int = 1, parts: int = 1, *, warning: bool = False
) -> str:
    base = f"{prefix.value}{training_job_name}"
    if warning:
        base += f"{PART_SEPARATOR}{WARNING_MARK}"
    return base if parts == 1 else f"{base}{PART_SEPARATOR}part-{part}-of-{parts}"


def parse_alarm_name(prefix: AlarmPrefix, name: str) -> AlarmRef | None:
    """The AlarmRef one of this stack's idle alarm names was made from; None for any other name,
    another stack's included."""
    if not prefix.owns(name):
        return None
    job, _, part = name[len(prefix.value) :].partition(PART_SEPARATOR)
    if not TRAINING_JOB_NAME_PATTERN.fullmatch(job):
        return None
    mark, _, rest = part.partition(PART_SEPARATOR)
    warning = mark == WARNING_MARK
    if warning:
        part = rest
    if not part:
        ref = AlarmRef(prefix, job, warning=warning)
        return ref if ref.name == name else None
    numbers = part.removeprefix("part-").split("-of-")
    if len(numbers) != 2 or not all(number.isdigit() for number in numbers):
        return None
    ref = AlarmRef(prefix, job, int(numbers[0]), int(numbers[1]), warning=warning)
    return ref if 1 <= ref.part <= ref.parts and ref.parts > 1 and ref.name == name else None


def idle_condition(idle: IdlePolicy, metric: str = GPU_METRIC) -> str:
    """The rule in words: the alarm's description, and the reason a stopped job records."""
    return (
        f"every host at or below {_threshold(idle, metric):g}% {resource_of(metric)} utilization for "
        f"{idle.evaluation_periods} consecutive periods of {idle.period_seconds} s"
    )


def _threshold(idle: IdlePolicy, metric: str) -> float:
    if metric != CPU_METRIC:
        return idle.threshold_percent
    if idle.cpu_threshold_percent is None:
        raise ValueError("no CPU rule is configured (idle.cpu_threshold_percent)")
    return idle.cpu_threshold_percent


def warning_condition(idle: IdlePolicy) -> str:
    """The warning rule in words: the warning alarm's description and the warning's reason."""
    return (
        f"every host below {idle.warn_below_percent:g}% GPU utilization for "
        f"{idle.warn_evaluation_periods} consecutive periods of {idle.period_seconds} s"
    )


def alarm_requests(
    prefix: AlarmPrefix,
    training_job_name: str,
    instances: int,
    idle: IdlePolicy,
    topic_arn: str,
    *,
    warning: bool = False,
    metric: str = GPU_METRIC,
) -> list[dict[str, Any]]:
    """The PutMetricAlarm requests that watch every host of a training job of `instances` hosts:
    for the idle stop, or with `warning` for the low-utilization warning (`idle.warn_below_percent`
    must then be set); `metric` GPU_METRIC or CPU_METRIC (`idle.cpu_threshold_percent` set)."""
    if warning and idle.warn_below_percent is None:
        raise ValueError("no low-utilization warning is configured (idle.warn_below_percent)")
    if not TRAINING_JOB_NAME_PATTERN.fullmatch(training_job_name):
        raise ValueError(f"{training_job_name!r} is not a SageMaker training job name")
    if instances < 1:
        raise ValueError(f"a training job has at least one host, not {instances}")
    parts = -(-instances // MAX_HOSTS_PER_ALARM)
    requests = []
    for part in range(1, parts + 1):
        first = (part - 1) * MAX_HOSTS_PER_ALARM + 1
        hosts = range(first, min(first + MAX_HOSTS_PER_ALARM, instances + 1))
        description = warning_condition(idle) if warning else idle_condition(idle, metric)
        if parts > 1:
            outcome = "the owner is warned" if warning else "the job stops"
            description += (
                f"; this alarm watches algo-{hosts[0]}..algo-{hosts[-1]} of {instances} hosts, and {outcome} "
                f"when all {parts} of its alarms are in ALARM"
            )
        periods = idle.warn_evaluation_periods if warning else idle.evaluation_periods
        requests.append(
            {
                "AlarmName": alarm_name(prefix, training_job_name, part, parts, warning=warning),
                "AlarmDescription": description,
                "ActionsEnabled": True,
                "AlarmActions": [topic_arn],
                "Metrics": _metrics(training_job_name, hosts, idle.period_seconds, metric),
                "EvaluationPeriods": periods,
                "DatapointsToAlarm": periods,
                "Threshold": idle.warn_below_percent if warning else _threshold(idle, metric),
                "ComparisonOperator": "LessThanThreshold" if warning else "LessThanOrEqualToThreshold",
                "TreatMissingData": "notBreaching",
            }
        )
    return requests


def _metrics(training_job_name: str, hosts: range, period: int, metric: str) -> list[dict[str, Any]]:
    """One query per host; with several, the MAX across them is what the alarm watches (a single
    host's metric is watched as it is: MAX of one series would be a scalar)."""
    queries: list[dict[str, Any]] = [
        {
            "Id": f"host{host}",
            "MetricStat": {
                "Metric": {
                    "Namespace": NAMESPACE,
                    "MetricName": metric,
                    "Dimensions": [{"Name": HOST_DIMENSION, "Value": f"{training_job_name}/algo-{host}"}],
                },
                "Period": period,
                "Stat": "Maximum",
            },
            "ReturnData": len(hosts) == 1,
        }
        for host in hosts
    ]
    if len(hosts) > 1:
        ids = ",".join(query["Id"] for query in queries)
        label = f"busiest {resource_of(metric)} host of algo-{hosts[0]}..algo-{hosts[-1]}"
        queries.append({"Id": "busiest", "Expression": f"MAX([{ids}])", "Label": label, "ReturnData": True})
    return queries


def watch(
    prefix: AlarmPrefix,
    training_job_name: str,
    request: Mapping[str, Any],
    *,
    queued: bool,
    policy: Policy,
    topic_arn: str,
) -> PutIdleAlarms | None:
    """When an attempt reaches `Training`: its alarms, for the job `request` (a CreateTrainingJob
    request or DescribeTrainingJob answer) describes. Queued jobs are watched unless exempt
    (idle_scope.py), others only when `idle.enforce_outside_queue` is on; only queued GPU jobs get the low-utilization warning's
    alarms (their attempt records the warning, so it is sent once)."""
    if (queued and is_exempt(request)) or (not queued and not policy.idle.enforce_outside_queue):
        return None
    instances, metric = host_count(request), idle_metric(policy.idle, instance_types(request))
    requests = alarm_requests(prefix, training_job_name, instances, policy.idle, topic_arn, metric=metric)
    reason = f"watching for idle {resource_of(metric)}s: {idle_condition(policy.idle, metric)} stops the job"
    if queued and metric == GPU_METRIC and policy.idle.warn_below_percent is not None:
        requests += alarm_requests(prefix, training_job_name, instances, policy.idle, topic_arn, warning=True)
        reason += f"; {warning_condition(policy.idle)} warns its owner"
    return PutIdleAlarms(training_job_name, tuple(requests), reason)


def stop_watching(prefix: AlarmPrefix, training_job_name: str, instances: int, reason: str) -> list[DeleteIdleAlarms]:
    """When an attempt ends: delete its alarms (every part, the warning's too: deleting one that
    was never put is harmless)."""
    parts = -(-instances // MAX_HOSTS_PER_ALARM)
    names = [
        *AlarmRef(prefix, training_job_name, 1, parts).all_names(),
        *AlarmRef(prefix, training_job_name, 1, parts, warning=True).all_names(),
    ]
    return _deletes(names, reason)


def orphaned(prefix: AlarmPrefix, alarm_names: Iterable[str], watched: Collection[str]) -> list[DeleteIdleAlarms]:
    """This stack's idle alarms that no watched training job owns, to delete; names under another
    prefix are never this stack's to delete, whoever listed them.

    `watched` holds the training jobs that should have alarms: the queue's open attempts and the
    outside jobs under `enforce_outside_queue`. List the alarms *before* reading `watched`: an alarm
    is created after its attempt opened, so every alarm listed then belongs to an attempt the later
    read still sees open, unless it has ended.
    """
    names = sorted(
        name
        for name in alarm_names
        if prefix.owns(name)
        and ((ref := parse_alarm_name(prefix, name)) is None or ref.training_job_name not in watched)
    )
    return _deletes(names, "orphaned idle alarm: no open attempt or watched training job owns it")


def _deletes(names: list[str], reason: str) -> list[DeleteIdleAlarms]:
    return [
        DeleteIdleAlarms(tuple(names[start : start + MAX_NAMES_PER_DELETE]), reason)
        for start in range(0, len(names), MAX_NAMES_PER_DELETE)
    ]


@dataclass(frozen=True)
class IdleNotification:
    """Which job's idle alarm changed state, and why: from CloudWatch's notification, or from the
    alarm read back in ALARM (idle_notifications.py)."""

    alarm: AlarmRef
    state: str
    """`NewStateValue`: ALARM, OK or INSUFFICIENT_DATA."""
    description: str | None
    state_reason: str | None
    changed_at: str | None
    metric: str = GPU_METRIC
    """The host metric the alarm reads (its `Metrics`)."""


def decide_idle(
    notification: IdleNotification, *, job: Job | None, policy: Policy, part_states: Mapping[str, str]
) -> Sequence[GovernanceAction]:
    """What an idle alarm's notification means.

    `job` is the queued job whose attempt the training job is, None for a job outside the queue.
    `part_states` maps the job's other alarm names to their state (empty for a job of one alarm).
    The job is stopped when it is still running and every part of it is idle; a notification about
    an attempt that has ended, or an outside job no longer watched, deletes the alarms instead. A
    warning alarm's notification warns the owner of a running job instead, once per attempt.
    """
    ref = notification.alarm
    if notification.state != ALARM:
        return []
    target: tuple[str | None, int | None] = (None, None)
    warned = False
    if job is not None:
        attempt = job.current_attempt
        if attempt is None or not attempt.is_open or attempt.training_job_name != ref.training_job_name:
            return _deletes(ref.all_names(), f"the attempt {ref.training_job_name} of job {job.name} has ended")
        if job.state not in (JobState.STARTING, JobState.RUNNING):
            return []
        if is_exempt(job.request):
            return _deletes(ref.all_names(), f"job {job.name} is exempt from the idle stop (smq:idle-exempt)")
        target, warned = (job.name, attempt.number), ref.warning and attempt.warned_at is not None
    elif ref.warning:
        return _deletes(ref.all_names(), "only queued jobs are warned of low utilization")
    elif not policy.idle.enforce_outside_queue:
        return _deletes(ref.all_names(), "jobs outside the queue are no longer watched (idle.enforce_outside_queue)")
    if ref.warning and policy.idle.warn_below_percent is None:
        return _deletes(ref.all_names(), "low-utilization warnings are off (idle.warn_below_percent)")
    others = [name for name in ref.all_names() if name != ref.name]
    if warned or any(part_states.get(name) != ALARM for name in others):
        return []
    job_name, attempt_number = target
    if ref.warning and job_name is not None and attempt_number is not None:
        return [WarnLowUtilization(ref.training_job_name, job_name, attempt_number, _warning_reason(notification))]
    return [StopIdleJob(ref.training_job_name, *target, _reason(notification))]


def _warning_reason(notification: IdleNotification) -> str:
    """The warning alarm's own rule (its description's first clause), as `_reason` for a stop."""
    name = notification.alarm.name
    when = f", {notification.changed_at}" if notification.changed_at else ""
    rule = notification.description.split("; ")[0] if notification.description else "low GPU utilization"
    return f"low GPU utilization: {rule} (CloudWatch alarm {name}{when}); the job keeps running"


def _reason(notification: IdleNotification) -> str:
    """The alarm's own description (written by `alarm_requests`, its first clause being the rule),
    so the reason states the rule the alarm enforced even if the policy has changed since."""
    name = notification.alarm.name
    when = f", {notification.changed_at}" if notification.changed_at else ""
    idle = f"idle {resource_of(notification.metric)}"
    if notification.description:
        return f"{idle}: {notification.description.split('; ')[0]} (CloudWatch alarm {name}{when})"
    return f"{idle}: CloudWatch alarm {name} fired{when}: {notification.state_reason or 'no reason given'}"
