"""Budget warnings: when an attempt's end brings its team's spend this month to a threshold of the
team's budget (`warn_at`, shares of `monthly_usd`; `warn` and `hold` budgets alike), the team and
the attempt's owner are told, exactly once per team, UTC month and threshold.

A TrainingEndListener, told after the cost recorder (service/cost_recorder.py) has added the
attempt to the cost records, so the month's totals include it. Several attempt ends may cross a
threshold at once (or one end be delivered twice): each claims the threshold's mark with a
conditional put (`BudgetWarningMarks.claim`) before publishing, and only the claim that set it
publishes. A publish that fails after the claim is not repeated (the Notifier logs it): a missed
notice beats a flood of them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from aws_lambda_powertools import Logger

from smq_lambda.domain.costs.budgets import month_days, month_start
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.governance import notices
from smq_lambda.ports import BudgetWarningMarks, ConfigSource, CostRecords, Notifier
from smq_lambda.scheduling.budget_hold import budget_team

logger = Logger(service="smq", child=True)


class BudgetWarnings:
    def __init__(
        self,
        config: ConfigSource,
        records: CostRecords,
        marks: BudgetWarningMarks,
        notifier: Notifier | None,
        clock: Callable[[], datetime],
    ) -> None:
        """`notifier` None: no notifications topic, so warnings are only logged."""
        self._config = config
        self._records = records
        self._marks = marks
        self._notifier = notifier
        self._clock = clock

    def on_training_end(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None:
        """Tell the team of each threshold its month's spend has reached and no one told it of."""
        team = budget_team(job)
        budget = self._config.load().budgets.get(team)
        if budget is None:
            return
        now = self._clock()
        spent = self._records.totals("team", month_days(now)).get(team)
        if spent is None:
            return
        month = f"{month_start(now):%Y-%m}"
        for threshold in budget.warn_at:
            if spent.spend_usd < threshold * budget.monthly_usd or not self._marks.claim(team, month, threshold):
                continue
            notice = notices.about_budget(job, team, budget, spent.spend_usd, threshold, now)
            logger.info("budget threshold reached", extra={"team": team, "month": month, "threshold": threshold})
            if self._notifier is not None:
                self._notifier.publish(notice)
