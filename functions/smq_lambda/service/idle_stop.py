"""An idle alarm fired: stop the training job whose GPUs sat idle.

The decision is `governance.idle.decide_idle`; this use case finds the queued job the training job
is an attempt of, reads the states of the job's other alarms (a job of more than 10 hosts has
several), and carries the actions out. A queued job is written `stopping` with the idle outcome
(conditionally, deciding again after a lost race) before SageMaker is asked to stop, so when the
stop lands the job ends failed, never re-queued; should the stop call fail, the scheduler's pass
and reconciliation send it again for every `stopping` job.

Reconciliation hands it every alarm still in ALARM as well (`IdleWatch.in_alarm`): a notification
this function failed on three times went to its dead-letter queue, and an alarm already in ALARM
does not notify again while the job stays idle. Acting twice on one alarm is the duplicate case.

Duplicate and late notifications are safe: once the job is `stopping` (or has ended) the decision
is to do nothing, or to delete the alarms of an attempt that has ended.

A warning alarm's notification (`idle.warn_below_percent`) marks the attempt warned, conditionally,
and tells the owner; the job runs on. The owner hears of a stop or a warning through the notifier
only after the write succeeded, so a duplicate notification, whose decision is to do nothing, tells
no one twice; a failed publish is logged and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from aws_lambda_powertools import Logger

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.errors import AlarmServiceError, TrainingServiceError, VersionConflict
from smq_lambda.governance import notices
from smq_lambda.governance.actions import DeleteIdleAlarms, GovernanceAction, StopIdleJob, WarnLowUtilization
from smq_lambda.governance.idle import AlarmPrefix, IdleNotification, decide_idle
from smq_lambda.governance.notices import Notice, NoticeAction
from smq_lambda.governance.policy import Policy
from smq_lambda.ports import IdleAlarms, JobStore, Notifier, PolicySource, TrainingService

logger = Logger(service="smq", child=True)

DECIDE_RETRIES = 5


@dataclass
class IdleStopOutcome:
    """What one notification did."""

    stopped: StopIdleJob | None = None
    warned: WarnLowUtilization | None = None
    deleted: list[str] = field(default_factory=list)


class IdleStop:
    def __init__(
        self,
        *,
        store: JobStore,
        training: TrainingService,
        alarms: IdleAlarms,
        policy: PolicySource | None,
        clock: Callable[[], datetime],
        prefix: AlarmPrefix,
        notifier: Notifier | None = None,
    ) -> None:
        """`policy` None: the default governance policy. `notifier` None: no notifications topic;
        the owners' notices are only logged."""
        self._store = store
        self._training = training
        self._alarms = alarms
        self._policy = policy
        self._clock = clock
        self._prefix = prefix
        self._notifier = notifier

    @property
    def prefix(self) -> AlarmPrefix:
        """This stack's idle alarms, the only ones whose notifications it acts on."""
        return self._prefix

    def handle(self, notification: IdleNotification) -> IdleStopOutcome:
        outcome = IdleStopOutcome()
        for _ in range(DECIDE_RETRIES):
            job = self._owner(notification.alarm.training_job_name)
            actions = self._decide(notification, job)
            try:
                for action in actions:
                    self._apply(action, job, outcome)
            except VersionConflict:
                continue
            return outcome
        logger.warning("idle stop kept losing races; the next notification decides again")
        return outcome

    def _owner(self, training_job_name: str) -> Job | None:
        """The queued job one of whose attempts is `training_job_name`; None: outside the queue
        (or a job that has finished, whose training job is no longer the queue's to govern)."""
        return next(
            (
                job
                for job in self._store.in_use().live
                if any(attempt.training_job_name == training_job_name for attempt in job.attempts)
            ),
            None,
        )

    def _decide(self, notification: IdleNotification, job: Job | None) -> Sequence[GovernanceAction]:
        """Raises AlarmServiceError when the states of the job's other alarms cannot be read: no
        stop on a guess, and an alarm notifies only when its state changes, so the invocation
        fails and Lambda delivers the notification again."""
        ref = notification.alarm
        others = [name for name in ref.all_names() if name != ref.name]
        part_states = self._alarms.states(others) if others else {}
        policy = self._policy.load() if self._policy is not None else Policy()
        return decide_idle(notification, job=job, policy=policy, part_states=part_states)

    def _apply(self, action: GovernanceAction, job: Job | None, outcome: IdleStopOutcome) -> None:
        if isinstance(action, DeleteIdleAlarms):
            try:
                self._alarms.delete(action.alarm_names)
            except AlarmServiceError as exc:
                logger.warning("could not delete idle alarms; reconciliation sweeps them", extra={"error": str(exc)})
                return
            outcome.deleted += action.alarm_names
        elif isinstance(action, StopIdleJob):
            stopping = None
            if action.job_name is not None and job is not None:
                stopping = lifecycle.stop_for_governance(
                    job, self._clock(), outcome=AttemptOutcome.IDLE_GPU, reason=action.reason
                )
                self._store.save(stopping, expected_version=job.version)
            self._stop(action)
            outcome.stopped = action
            if stopping is not None:
                self._notify(notices.about_job(stopping, NoticeAction.IDLE_STOP, action.reason))
            else:
                self._notify(notices.about_outside_job(action.training_job_name, NoticeAction.IDLE_STOP, action.reason))
        elif isinstance(action, WarnLowUtilization) and job is not None:
            warned = lifecycle.warn_low_utilization(job, self._clock(), reason=action.reason)
            self._store.save(warned, expected_version=job.version)
            outcome.warned = action
            self._notify(notices.about_job(warned, NoticeAction.LOW_UTILIZATION, action.reason))

    def _notify(self, notice: Notice) -> None:
        if self._notifier is None:
            logger.info("no notifications topic; the notice is only logged", extra={"job": notice.job})
            return
        self._notifier.publish(notice)

    def _stop(self, action: StopIdleJob) -> None:
        """A queued job is `stopping` by now, and the scheduler sends its stop again should this one
        fail; a job outside the queue has no such record, so its failed stop is raised, and Lambda
        delivers the notification again."""
        logger.warning(
            "stopping an idle training job",
            extra={"training_job": action.training_job_name, "job": action.job_name, "reason": action.reason},
        )
        try:
            self._training.stop(action.training_job_name)
        except TrainingServiceError as exc:
            logger.error(
                "could not stop an idle training job",
                extra={"training_job": action.training_job_name, "error": str(exc)},
            )
            if action.job_name is None:
                raise
