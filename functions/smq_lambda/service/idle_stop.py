"""An idle alarm fired: stop the training job whose GPUs sat idle.

The decision is `governance.idle.decide_idle`; this use case finds the queued job the training job
is an attempt of, reads the states of the job's other alarms (a job of more than 10 hosts has
several), and carries the actions out. A queued job is written `stopping` with the idle outcome
(conditionally, deciding again after a lost race) before SageMaker is asked to stop, so when the
stop lands the job ends failed, never re-queued; should the stop call fail, the scheduler's pass
and reconciliation send it again for every `stopping` job.

Duplicate and late notifications are safe: once the job is `stopping` (or has ended) the decision
is to do nothing, or to delete the alarms of an attempt that has ended.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from aws_lambda_powertools import Logger

from smq_lambda.domain import lifecycle
from smq_lambda.domain.model import Job
from smq_lambda.domain.outcomes import AttemptOutcome
from smq_lambda.errors import AlarmServiceError, TrainingServiceError, VersionConflict
from smq_lambda.governance.actions import DeleteIdleAlarms, GovernanceAction, StopIdleJob
from smq_lambda.governance.idle import AlarmPrefix, IdleNotification, decide_idle
from smq_lambda.ports import IdleAlarms, JobStore, PolicySource, TrainingService

logger = Logger(service="smq", child=True)

DECIDE_RETRIES = 5


@dataclass
class IdleStopOutcome:
    """What one notification did."""

    stopped: StopIdleJob | None = None
    deleted: list[str] = field(default_factory=list)


class IdleStop:
    def __init__(
        self,
        *,
        store: JobStore,
        training: TrainingService,
        alarms: IdleAlarms,
        policy: PolicySource,
        clock: Callable[[], datetime],
        prefix: AlarmPrefix,
    ) -> None:
        self._store = store
        self._training = training
        self._alarms = alarms
        self._policy = policy
        self._clock = clock
        self._prefix = prefix

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
        return decide_idle(notification, job=job, policy=self._policy.load(), part_states=part_states)

    def _apply(self, action: GovernanceAction, job: Job | None, outcome: IdleStopOutcome) -> None:
        if isinstance(action, DeleteIdleAlarms):
            try:
                self._alarms.delete(action.alarm_names)
            except AlarmServiceError as exc:
                logger.warning("could not delete idle alarms; reconciliation sweeps them", extra={"error": str(exc)})
                return
            outcome.deleted += action.alarm_names
        elif isinstance(action, StopIdleJob):
            if action.job_name is not None and job is not None:
                stopping = lifecycle.stop_for_governance(
                    job, self._clock(), outcome=AttemptOutcome.IDLE_GPU, reason=action.reason
                )
                self._store.save(stopping, expected_version=job.version)
            self._stop(action)
            outcome.stopped = action

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
