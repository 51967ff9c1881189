"""Warm pools from SageMaker's reports: an own attempt that ended with its instances kept warm
(`WarmPoolStatus` `Available`) leaves a warm pool the passes hold in its pool; `Reused` or
`Terminated` ends it, counting its retained billable time and whether a job reused it. SageMaker
reports those from the ended job, in events and DescribeTrainingJob; reconciliation describes
every warm pool still held, so an end no event told is seen within one reconciliation.

Told of every report of an ended own attempt, duplicates and late ones included (a
TrainingEndListener): the store's conditional writes make each count once, and a late `Available`
never brings back a warm pool that ended.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from aws_lambda_powertools import Logger

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.domain.sagemaker.warm_pool_status import AVAILABLE, ENDED, REUSED, TERMINATED, WarmPoolStatus
from smq_lambda.domain.warm.warm_pools import warm_pool_left
from smq_lambda.ports import TrainingService, WarmPoolStore

logger = Logger(service="smq", child=True)


class WarmPoolKeeper:
    def __init__(self, store: WarmPoolStore, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock

    def on_training_end(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        report = status.warm_pool
        if report is None:
            return
        if report.status == AVAILABLE:
            warm = warm_pool_left(job, attempt_number, status.name, status.end_time or self._clock())
            if warm is not None and self._store.record(warm):
                logger.info("warm pool kept", extra={"job": job.name, "training_job": status.name, "pool": warm.pool})
        elif report.status in ENDED:
            self._end(status.name, report, _instances(job, attempt_number))

    def reconcile(self, training: TrainingService) -> int:
        """Ask SageMaker about every warm pool still held (a report of its end may be lost): end
        those it reports reused or terminated, or does not know; returns how many ended."""
        ended = 0
        for warm in self._store.available(self._clock()):
            status = training.describe(warm.training_job_name)
            report = WarmPoolStatus(TERMINATED) if status is None else status.warm_pool
            if report is not None and report.status in ENDED:
                ended += self._end(warm.training_job_name, report, warm.count)
        return ended

    def _end(self, training_job_name: str, report: WarmPoolStatus, instances: int) -> bool:
        retained = (report.retained_billable_s or 0) * instances
        ended = self._store.end(training_job_name, reused=report.status == REUSED, retained_instance_s=retained)
        if ended:
            logger.info(
                "warm pool ended",
                extra={"training_job": training_job_name, "status": report.status, "reused_by": report.reused_by},
            )
        return ended


def _instances(job: Job, attempt_number: int) -> int:
    """The instances the attempt held (`ResourceRetainedBillableTimeInSeconds` is per instance)."""
    attempt = job.attempt(attempt_number)
    if attempt is not None and attempt.placement is not None:
        return attempt.placement.count
    return int((job.request.get("ResourceConfig") or {}).get("InstanceCount", 1))
