"""The idle alarms' side of the scheduler: put a training job's alarms when it reaches `Training`,
delete them when its attempt ends, and during reconciliation sweep orphans and list the alarms
already in ALARM (a notification the idle-stop function failed on is re-checked from them).

The decisions are governance/idle.py's; this only carries them out. Alarms are best-effort: a
CloudWatch failure is logged and never fails the report or the pass that asked for it. A missed
put is made again by the next reconciliation (which sees the attempt still `Training` and its
alarms missing); a missed delete is swept as an orphan.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from aws_lambda_powertools import Logger

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.jobs.training_status import IN_PROGRESS
from smq_lambda.domain.placements.placement import request_as_sent
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.errors import AlarmServiceError, TrainingServiceError
from smq_lambda.governance import idle
from smq_lambda.governance.actions import DeleteIdleAlarms
from smq_lambda.governance.idle import IdleNotification
from smq_lambda.governance.idle_notifications import notification_of_alarm
from smq_lambda.governance.idle_scope import host_count
from smq_lambda.governance.policy import Policy
from smq_lambda.ports import IdleAlarms, TrainingService

logger = Logger(service="smq", child=True)

TRAINING = "Training"
"""The secondary status at which a training job's GPUs are expected to work."""
WATCHED_STATES = frozenset({JobState.STARTING, JobState.RUNNING})
ENDED_STATUSES = frozenset({"Completed", "Failed", "Stopped"})


def is_training(status: TrainingJobStatus) -> bool:
    return status.status == IN_PROGRESS and status.secondary_status == TRAINING


def hosts_of(job: Job) -> int:
    """Every instance the job's attempt runs on (algo-1..N)."""
    return max(sum(job.demand.values()), 1)


class IdleWatch:
    def __init__(self, alarms: IdleAlarms, topic_arn: str, prefix: idle.AlarmPrefix) -> None:
        """`prefix`: this stack's, the one `alarms` lists and deletes under."""
        self._alarms = alarms
        self._topic_arn = topic_arn
        self._prefix = prefix

    @property
    def alarms(self) -> IdleAlarms:
        return self._alarms

    @property
    def prefix(self) -> idle.AlarmPrefix:
        return self._prefix

    def on_report(
        self,
        before: Job,
        after: Job,
        attempt_number: int,
        status: TrainingJobStatus,
        policy: Policy,
        existing: Collection[str] | None = None,
    ) -> None:
        """After a report about attempt `attempt_number` (`after` is the job as it now stands):
        watch the attempt when it trains, stop watching it when it has ended. `existing`: see
        `watch`."""
        attempt, was = after.current_attempt, before.current_attempt
        if attempt is None or attempt.number != attempt_number or attempt.training_job_name != status.name:
            return
        if attempt.is_open and after.state in WATCHED_STATES and is_training(status):
            request = request_as_sent(after.request, attempt.placement)
            self.watch(attempt.training_job_name, request, queued=True, policy=policy, existing=existing)
        elif was is not None and was.number == attempt_number and was.is_open and not attempt.is_open:
            self.attempt_ended(before)

    def attempt_ended(self, before: Job) -> None:
        """`before`'s current attempt has ended: delete its alarms."""
        attempt = before.current_attempt
        if attempt is not None:
            reason = f"attempt {attempt.number} of job {before.name} ended"
            self._delete(idle.stop_watching(self._prefix, attempt.training_job_name, hosts_of(before), reason))

    def on_outside_report(self, detail: Mapping[str, Any], policy: Policy) -> None:
        """A state change of a training job outside the queue (DescribeTrainingJob's shape): watched
        while it trains when `idle.enforce_outside_queue` is on, unwatched when it ends."""
        name, status = detail.get("TrainingJobName"), detail.get("TrainingJobStatus")
        if not isinstance(name, str):
            return
        if status == IN_PROGRESS and detail.get("SecondaryStatus") == TRAINING:
            self.watch(name, detail, queued=False, policy=policy)
        elif status in ENDED_STATUSES and policy.idle.enforce_outside_queue:
            reason = f"training job {name} ended ({status})"
            self._delete(idle.stop_watching(self._prefix, name, host_count(detail), reason))

    def watch(
        self,
        training_job_name: str,
        request: Mapping[str, Any],
        *,
        queued: bool,
        policy: Policy,
        existing: Collection[str] | None = None,
    ) -> None:
        """Put the alarms of the job `request` describes (the queued request, or SageMaker's
        description of a job outside the queue); with `existing` (the alarm names reconciliation
        listed), only when one of them is missing, so reconciling does not rewrite every alarm."""
        action = idle.watch(
            self._prefix, training_job_name, request, queued=queued, policy=policy, topic_arn=self._topic_arn
        )
        if action is None:
            return
        if existing is not None and all(request["AlarmName"] in existing for request in action.requests):
            return
        try:
            self._alarms.put(action.requests)
        except AlarmServiceError as exc:
            logger.warning(
                "could not put idle alarms; reconciliation retries",
                extra={"training_job": training_job_name, "error": str(exc)},
            )
            return
        logger.info("idle alarms put", extra={"training_job": training_job_name, "reason": action.reason})

    def alarm_names(self) -> list[str] | None:
        """Every idle alarm's name of this stack; None when CloudWatch cannot say (the sweep then
        waits)."""
        try:
            return self._alarms.names()
        except AlarmServiceError as exc:
            logger.warning("could not list idle alarms; the next reconciliation sweeps", extra={"error": str(exc)})
            return None

    def in_alarm(self) -> list[IdleNotification] | None:
        """This stack's idle alarms now in ALARM, each read as the notification it sent; None when
        CloudWatch cannot say (the next reconciliation re-checks)."""
        try:
            alarms = self._alarms.in_alarm()
        except AlarmServiceError as exc:
            logger.warning(
                "could not list idle alarms in ALARM; the next reconciliation does", extra={"error": str(exc)}
            )
            return None
        return [notice for alarm in alarms if (notice := notification_of_alarm(self._prefix, alarm)) is not None]

    def sweep(
        self,
        listed: Collection[str],
        open_attempts: Collection[str],
        policy: Policy,
        training: TrainingService,
    ) -> None:
        """Delete the alarms in `listed` (read before `open_attempts`) that no watched training job
        owns. Under `enforce_outside_queue`, an alarm of a training job outside the queue stays
        while SageMaker still reports that job in progress."""
        watched = set(open_attempts)
        if policy.idle.enforce_outside_queue:
            watched |= self._running_outside(listed, watched, training.describe)
        for action in idle.orphaned(self._prefix, listed, watched):
            self._delete([action])

    def _running_outside(
        self,
        listed: Collection[str],
        watched: Collection[str],
        describe: Callable[[str], TrainingJobStatus | None],
    ) -> set[str]:
        running: set[str] = set()
        for name in listed:
            ref = idle.parse_alarm_name(self._prefix, name)
            if ref is None or ref.training_job_name in watched or ref.training_job_name in running:
                continue
            try:
                status = describe(ref.training_job_name)
            except TrainingServiceError:
                running.add(ref.training_job_name)
                continue
            if status is not None and status.status == IN_PROGRESS:
                running.add(ref.training_job_name)
        return running

    def _delete(self, actions: list[DeleteIdleAlarms]) -> None:
        for action in actions:
            try:
                self._alarms.delete(action.alarm_names)
            except AlarmServiceError as exc:
                logger.warning(
                    "could not delete idle alarms; reconciliation sweeps them",
                    extra={"alarms": list(action.alarm_names), "error": str(exc)},
                )
                continue
            logger.info("idle alarms deleted", extra={"alarms": list(action.alarm_names), "reason": action.reason})
