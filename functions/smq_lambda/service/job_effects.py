"""The writes and SageMaker calls the scheduler's use cases make for one job, each tolerating what
may go wrong with it: a lost race (VersionConflict) is never an error, the other writer's change
stands; a stop that fails is sent again by reconciliation; a refused create backs off.

One job never stops the others (`isolated`): an unexpected error in one job's step is logged with
the job's name, counted (the `JobErrors` metric) and the use case goes on with the next job.
Whatever state the failed step left the job in is one reconciliation repairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from enum import Enum

from aws_lambda_powertools import Logger

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.lifecycle import StartRetryLimits
from smq_lambda.domain.jobs.model import Job
from smq_lambda.errors import StartOutcomeUnknown, StartRefused, TrainingServiceError, VersionConflict
from smq_lambda.governance.notices import Notice
from smq_lambda.ports import JobStore, Notifier, TrainingService

logger = Logger(service="smq", child=True)


class Created(Enum):
    """What became of a CreateTrainingJob for an attempt."""

    YES = "created"
    REFUSED = "refused"
    UNKNOWN = "unknown"
    """The call may have taken effect: the attempt stays open and reconciliation asks SageMaker."""


class JobEffects:
    def __init__(
        self,
        *,
        store: JobStore,
        training: TrainingService,
        clock: Callable[[], datetime],
        retry_limits: StartRetryLimits,
        notifier: Notifier | None = None,
    ) -> None:
        """`notifier` None: no notifications topic configured; notices are only logged."""
        self._store = store
        self._training = training
        self._clock = clock
        self._retry_limits = retry_limits
        self._notifier = notifier

    def save(self, updated: Job, current: Job) -> Job | None:
        """`updated` as stored, or None when `current` changed meanwhile (the race is lost)."""
        try:
            return self._store.save(updated, expected_version=current.version)
        except VersionConflict:
            logger.info("job changed under the pass; skipped", extra={"job": current.name})
            return None

    def notify(self, notice: Notice) -> None:
        """Tell the job's owner of a change already written; a failed publish never undoes it."""
        if self._notifier is None:
            logger.info("no notifications topic; the notice is only logged", extra={"job": notice.job})
            return
        self._notifier.publish(notice)

    def stop(self, training_job_name: str) -> None:
        """Ask SageMaker to stop; a failure is logged, and reconciliation sends the stop again."""
        try:
            self._training.stop(training_job_name)
        except TrainingServiceError as exc:
            logger.warning(
                "stop failed; reconciliation retries", extra={"training_job": training_job_name, "error": str(exc)}
            )

    def end_warm_pool(self, training_job_name: str) -> bool:
        """Ask SageMaker to end a warm pool; False when it failed (logged: a later pass asks again,
        the warm pool still being held)."""
        try:
            self._training.end_warm_pool(training_job_name)
        except TrainingServiceError as exc:
            logger.warning(
                "ending a warm pool failed; a later pass asks again",
                extra={"training_job": training_job_name, "error": str(exc)},
            )
            return False
        return True

    def create(self, job: Job) -> tuple[Created, Job]:
        """Create the job's current attempt; a refusal fails the job or sends it back with backoff,
        an unknown outcome leaves it `starting`. Returns what happened and the job as it now stands."""
        try:
            self._training.start_attempt(job)
        except StartRefused as refusal:
            logger.warning(
                "start refused", extra={"job": job.name, "lasting": refusal.lasting, "reason": refusal.reason}
            )
            return Created.REFUSED, self.refuse(job, refusal.reason, lasting=refusal.lasting) or job
        except StartOutcomeUnknown as unknown:
            logger.warning(
                "start outcome unknown; the attempt stays open until reconciliation asks SageMaker",
                extra={"job": job.name, "reason": unknown.reason},
            )
            return Created.UNKNOWN, job
        logger.info("attempt created", extra={"job": job.name, "attempt": job.attempts[-1].training_job_name})
        return Created.YES, job

    def refuse(self, job: Job, reason: str, *, lasting: bool) -> Job | None:
        """Close the job's attempt as refused: a lasting refusal or one past the start retry limits
        fails the job, any other sends it back to wait out its backoff."""
        refused = lifecycle.refuse_start(job, self._clock(), reason=reason, lasting=lasting, limits=self._retry_limits)
        return self.save(refused, job)


@contextmanager
def isolated(job_name: str, step: str, job_errors: list[str]) -> Iterator[None]:
    """Run one job's step; an unexpected error is logged with the job's name and recorded in
    `job_errors`, and the caller goes on with the other jobs."""
    try:
        yield
    except Exception:
        logger.exception("unexpected error; the other jobs go on", extra={"job": job_name, "step": step})
        job_errors.append(job_name)
