"""Training jobs the queue did not start: stopped when they break the policy's tags and limits, and
the policy topic told which job, which rules, and who started it.

The decision is `governance.limits.check_outside_job`; this use case only picks the moment, rules
out the queue's own attempts, and carries the actions out.

It acts on the report that a job is `Starting` (the first SageMaker sends for a job that will run),
and only when DescribeTrainingJob still shows it running and not being stopped, so a duplicate or
late `Starting` event, after the stop landed, does nothing. When DescribeTrainingJob cannot be
asked, the stop goes ahead (stopping twice is harmless; a job left running is not) and its
notification may then repeat.

Events can be lost, so reconciliation also sweeps the training jobs created in the last
`SWEEP_LOOKBACK` (`sweep`): a violating job whose `Starting` event never came is stopped within one
reconciliation period. Older jobs are left alone, so tightening the policy never stops work that
was already running before it (beyond that lookback).

A queue attempt is told apart by the job and attempt its tags name *and* the name the queue gives
that attempt (`is_own_attempt`), never by the tags alone, which anyone can set. A training job
whose `smq:stack` tag names another smq stack of the account is that stack's to govern, never this
one's (`is_another_stacks`): a staging stack must not stop production's attempts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from aws_lambda_powertools import Logger

from smq_lambda.domain.jobs.model import is_another_stacks, queue_tags
from smq_lambda.domain.jobs.training_status import IN_PROGRESS, is_own_attempt
from smq_lambda.errors import TrainingServiceError
from smq_lambda.governance import notices
from smq_lambda.governance.actions import NotifyPolicy, StopOutsideJob
from smq_lambda.governance.limits import check_outside_job
from smq_lambda.governance.notices import Notice, NoticeAction
from smq_lambda.governance.untyped_fields import tag_map
from smq_lambda.ports import JobStore, Notifier, PolicySource, TrainingService

logger = Logger(service="smq", child=True)

STARTING = "Starting"
STOPPING = "Stopping"
SWEEP_LOOKBACK = timedelta(minutes=15)
"""Three reconciliation periods: a job is swept at least twice even when one reconciliation fails."""


@dataclass(frozen=True)
class OutsideJobCheck:
    """What checking one report did."""

    stopped: StopOutsideJob | None = None
    """The stop asked for (its violations and reason); None: nothing was stopped."""
    notified: bool = False


class OutsideJobs:
    def __init__(
        self,
        *,
        store: JobStore,
        training: TrainingService,
        policy: PolicySource,
        notifier: Notifier | None,
        clock: Callable[[], datetime],
        stack: str | None = None,
    ) -> None:
        """Without a `notifier` (no notifications topic configured) jobs are still stopped; the log
        says why. `stack`: this stack's name; training jobs tagged with another are left alone."""
        self._store = store
        self._training = training
        self._policy = policy
        self._notifier = notifier
        self._clock = clock
        self._stack = stack

    def check(self, detail: Mapping[str, Any]) -> OutsideJobCheck:
        """Apply the policy to the training job a state-change event's `detail` reports (the
        DescribeTrainingJob members and the job's Tags as a map)."""
        name = detail.get("TrainingJobName")
        if not isinstance(name, str) or detail.get("TrainingJobStatus") != IN_PROGRESS:
            return OutsideJobCheck()
        if detail.get("SecondaryStatus") != STARTING or self._is_exempt(name, detail.get("Tags")):
            return OutsideJobCheck()
        return self._enforce(name, detail, confirm_running=True)

    def sweep(self) -> list[OutsideJobCheck]:
        """Apply the policy to every training job outside the queue created in the last
        `SWEEP_LOOKBACK` that still runs; returns what was stopped. Listing them failing is logged and
        left to the next reconciliation."""
        try:
            details = self._training.in_progress_since(self._clock() - SWEEP_LOOKBACK)
        except TrainingServiceError as exc:
            logger.warning(
                "could not list recent training jobs; the next reconciliation sweeps", extra={"error": str(exc)}
            )
            return []
        checks = []
        for detail in details:
            name = detail.get("TrainingJobName")
            if isinstance(name, str) and not self._is_exempt(name, detail.get("Tags")):
                checks.append(self._enforce(name, detail, confirm_running=False))
        return [check for check in checks if check.stopped is not None]

    def _enforce(self, name: str, detail: Mapping[str, Any], *, confirm_running: bool) -> OutsideJobCheck:
        """Stop and announce `name` when it breaks the policy. `confirm_running`: `detail` came with an
        event, which may be late, so DescribeTrainingJob has the last word first."""
        actions = check_outside_job(detail, self._policy.load(), tags=detail.get("Tags"))
        stop = next((action for action in actions if isinstance(action, StopOutsideJob)), None)
        if stop is None or (confirm_running and not self._still_running(name)):
            return OutsideJobCheck()
        try:
            self._training.stop(name)
        except TrainingServiceError as exc:
            logger.error(
                "could not stop a training job that breaks the policy",
                extra={"training_job": name, "reason": stop.reason, "error": str(exc)},
            )
            return OutsideJobCheck()
        logger.warning("stopped a training job outside the queue", extra={"training_job": name, "reason": stop.reason})
        notified = False
        for notification in (action for action in actions if isinstance(action, NotifyPolicy)):
            notice = notices.about_outside_job(
                name,
                NoticeAction.POLICY_STOP,
                notification.message,
                subject_line=notification.subject,
                started_by=stop.started_by,
            )
            notified = self._notify(notice)
        return OutsideJobCheck(stopped=stop, notified=notified)

    def _is_exempt(self, training_job_name: str, tags: object) -> bool:
        """This queue's own attempts, and every training job another smq stack tagged as its own."""
        tagged = tag_map(tags)
        if is_another_stacks(tagged, self._stack):
            return True
        claimed = queue_tags(tagged)
        if claimed is None:
            return False
        job_name, attempt = claimed
        job = self._store.get(job_name)
        return job is not None and is_own_attempt(job, attempt, training_job_name)

    def _still_running(self, training_job_name: str) -> bool:
        try:
            status = self._training.describe(training_job_name)
        except TrainingServiceError as exc:
            logger.warning(
                "could not confirm the training job still runs; stopping it anyway",
                extra={"training_job": training_job_name, "error": str(exc)},
            )
            return True
        return status is not None and status.status == IN_PROGRESS and status.secondary_status != STOPPING

    def _notify(self, notice: Notice) -> bool:
        if self._notifier is None:
            logger.warning(
                "no notifications topic configured; the stop is only logged",
                extra={"training_job": notice.job, "notification": notice.message},
            )
            return False
        return self._notifier.publish(notice)
