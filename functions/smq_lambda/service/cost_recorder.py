"""What an ended attempt cost, recorded once: the TrainingEndListener that prices each of the
queue's own attempts when SageMaker reports it ended, adds it to the cost records under the job's
team, owner and cost tags, and publishes the team's spend as a metric.

The report is the training job's final word: its BillableTimeInSeconds (already reduced by the
managed spot saving) and TrainingTimeInSeconds. A report without either (an event that left them
out) is completed by DescribeTrainingJob, because the cost records keep the first record of an
attempt for good. They count an attempt once whatever the number of reports (duplicates, the
reconciliation's), and only that first record publishes the metric. Cost records or a price source
that cannot answer raise, which fails the report; its redelivery records the attempt then. Cost
records that counted the attempt but left a cost tag pending (CostDimensionsPending) still publishes the
spend, once, and raises: the attempt's next report adds the tag.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from smq_lambda.domain.costs.cost_totals import cost_groups
from smq_lambda.domain.costs.costs import AttemptCost, attempt_cost
from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.errors import CostDimensionsPending
from smq_lambda.governance.policy import IdlePolicy, Policy
from smq_lambda.ports import ConfigSource, CostRecords, PolicySource, PriceSource, TrainingService

logger = Logger(service="smq", child=True)

METRICS_NAMESPACE = "smq"
TEAM_SPEND_METRIC = "TeamSpendUsd"

SpendPublisher = Callable[[str, float], None]
"""Publishes one recorded attempt's spend (US dollars) for a team."""


def publish_team_spend(team: str, spend_usd: float) -> None:
    """One EMF record: `TeamSpendUsd` (unit None: CloudWatch has no currency unit), dimension `team`."""
    metrics = EphemeralMetrics(namespace=METRICS_NAMESPACE, service="smq")
    metrics.add_dimension(name="team", value=team)
    metrics.add_metric(name=TEAM_SPEND_METRIC, unit=MetricUnit.NoUnit, value=spend_usd)
    metrics.flush_metrics()


def idle_window_s(idle: IdlePolicy) -> int:
    """How long every GPU sat idle before an idle stop: the stop alarm's evaluation window
    (governance/idle.py)."""
    return idle.period_seconds * idle.evaluation_periods


class CostRecorder:
    def __init__(
        self,
        *,
        records: CostRecords,
        prices: PriceSource,
        config: ConfigSource,
        clock: Callable[[], datetime],
        training: TrainingService | None = None,
        policy: PolicySource | None = None,
        publish_spend: SpendPublisher = publish_team_spend,
    ) -> None:
        """`training` None: reports are taken as they come (no DescribeTrainingJob for missing times).
        `policy` None: the default governance policy's idle window."""
        self._records = records
        self._prices = prices
        self._config = config
        self._clock = clock
        self._training = training
        self._policy = policy
        self._publish_spend = publish_spend

    def on_training_end(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        status = self._with_final_times(status)
        attempt = _attempt(job, attempt_number, status)
        cost = attempt_cost(
            job,
            attempt,
            billable_s=status.billable_time_seconds,
            training_s=status.training_time_seconds,
            ended_at=status.end_time or attempt.ended_at or self._clock(),
            prices=self._prices.load(),
            idle_window_s=idle_window_s(self._load_policy().idle),
        )
        groups = cost_groups(job, self._config.load().cost_tags)
        try:
            recorded = self._records.record(cost, groups)
        except CostDimensionsPending as pending:
            if pending.recorded:
                self._counted(job, cost, groups["team"])
            raise
        if recorded:
            self._counted(job, cost, groups["team"])

    def _counted(self, job: Job, cost: AttemptCost, team: str) -> None:
        """What follows an attempt's first record: its log line and the team's spend metric."""
        _log(job, cost)
        if cost.spend_usd is not None:
            self._publish_spend(team, cost.spend_usd)

    def _with_final_times(self, status: TrainingJobStatus) -> TrainingJobStatus:
        if status.billable_time_seconds is not None or self._training is None:
            return status
        described = self._training.describe(status.name)
        return described if described is not None and described.status == status.status else status

    def _load_policy(self) -> Policy:
        return self._policy.load() if self._policy is not None else Policy()


def _attempt(job: Job, attempt_number: int, status: TrainingJobStatus) -> Attempt:
    """The ended attempt as the job keeps it; an attempt too old to be kept inline is known only
    by its training job name (no outcome, so nothing of it counts as waste)."""
    for attempt in job.attempts:
        if attempt.number == attempt_number:
            return attempt
    ended = status.end_time
    return Attempt(
        number=attempt_number, training_job_name=status.name, started_at=ended or job.submitted_at, ended_at=ended
    )


def _log(job: Job, cost: AttemptCost) -> None:
    if cost.spend_usd is None:
        logger.info(
            "attempt recorded unpriced: its instance type has no price",
            extra={"job": job.name, "training_job": cost.training_job_name, "demand": dict(job.demand)},
        )
        return
    logger.info(
        "attempt cost recorded",
        extra={
            "job": job.name,
            "training_job": cost.training_job_name,
            "spend_usd": round(cost.spend_usd, 6),
            "billable_s": cost.billable_s,
            "training_s": cost.training_s,
        },
    )
