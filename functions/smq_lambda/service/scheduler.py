"""The scheduler's use cases: take a SageMaker report (service/report_intake.py), reconcile with SageMaker
(service/reconciliation.py), run a pass (service/passes.py).

Each use case loads what it needs through the ports, asks the pure domain what to do, and writes
the result conditionally. A lost race (VersionConflict) is never an error: the other writer's change
stands, and the next report or pass sees it. One job never stops the others (see
service/job_effects.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from smq_lambda.domain.jobs.lifecycle import DEFAULT_RETRY_LIMITS, StartRetryLimits
from smq_lambda.ports import (
    ConfigSource,
    CostRecords,
    DurationStore,
    JobStore,
    Notifier,
    PassLease,
    PassSummaries,
    PolicySource,
    PriceSource,
    SpotInterruptionBook,
    TeamUsageHistory,
    TrainingEndListener,
    TrainingJobStatus,
    TrainingService,
    WarmPoolStore,
)
from smq_lambda.service.duration_history import DurationRecorder
from smq_lambda.service.idle_watch import IdleWatch
from smq_lambda.service.job_effects import JobEffects
from smq_lambda.service.pass_measures import STUCK_AFTER
from smq_lambda.service.passes import Passes, PassReport
from smq_lambda.service.reconciliation import Reconciler, Reconciliation
from smq_lambda.service.report_intake import ReportIntake, ReportOutcome
from smq_lambda.service.warm_pool_intake import WarmPoolKeeper


@dataclass(frozen=True)
class SchedulerPorts:
    """What the scheduler's use cases work through (built by handlers/composition.py when deployed).

    `policy` None: the default governance policy (`Policy()`). `idle_watch` None: no idle alarms (no
    idle topic configured). `team_usage` None: no usage history, so with team quotas every pass
    decides with no past usage (see service/team_usage.py). `notifier` None: no notifications
    topic, so the owners' notices (preemption, spot fallback, retry) are only logged. `stack`: this
    stack's name, which tells another smq stack's attempts apart (see report_intake.py).
    `training_end_listeners`: told of each own attempt's end in SageMaker (see ports.py), before the
    scheduler's own (`listeners`). `cost_records` and `prices`: the teams' spend and the prices the
    hold budgets need; without either no budget holds a job (scheduling/budget_hold.py).
    `durations` None: nothing is learned, and start estimates know only tags and
    MaxRuntimeInSeconds; else completions are added to it (service/duration_history.py) and passes
    estimate from it. `spot_interruptions`: where reports count spot interruptions and passes read
    their rates (None: no adaptive spot). `warm_pools`: where reports record the warm pools
    attempts leave and passes read them (None: warm pools are not counted, as before the queue knew
    of them)."""

    store: JobStore
    training: TrainingService
    config: ConfigSource
    lease: PassLease
    clock: Callable[[], datetime]
    pass_summaries: PassSummaries | None = None
    retry_limits: StartRetryLimits = DEFAULT_RETRY_LIMITS
    stuck_after: timedelta = STUCK_AFTER
    policy: PolicySource | None = None
    idle_watch: IdleWatch | None = None
    team_usage: TeamUsageHistory | None = None
    notifier: Notifier | None = None
    stack: str | None = None
    training_end_listeners: Sequence[TrainingEndListener] = ()
    cost_records: CostRecords | None = None
    prices: PriceSource | None = None
    durations: DurationStore | None = None
    spot_interruptions: SpotInterruptionBook | None = None
    warm_pools: WarmPoolStore | None = None

    def warm_pool_keeper(self) -> WarmPoolKeeper | None:
        return WarmPoolKeeper(self.warm_pools, self.clock) if self.warm_pools is not None else None

    def listeners(self) -> tuple[TrainingEndListener, ...]:
        """Every training-end listener, in the order they are told: those given (the composition
        root's cost recorder, then budget warnings), then the duration recorder, then the warm pool
        keeper."""
        recorder = (DurationRecorder(self.durations),) if self.durations is not None else ()
        keeper = self.warm_pool_keeper()
        return (*self.training_end_listeners, *recorder, *((keeper,) if keeper is not None else ()))


class Scheduler:
    def __init__(self, ports: SchedulerPorts) -> None:
        effects = JobEffects(
            store=ports.store,
            training=ports.training,
            clock=ports.clock,
            retry_limits=ports.retry_limits,
            notifier=ports.notifier,
        )
        self._reports = ReportIntake(
            store=ports.store,
            effects=effects,
            clock=ports.clock,
            config=ports.config,
            policy=ports.policy,
            idle_watch=ports.idle_watch,
            stack=ports.stack,
            training_end_listeners=ports.listeners(),
            spot_interruptions=ports.spot_interruptions,
        )
        self._reconciler = Reconciler(
            store=ports.store,
            training=ports.training,
            config=ports.config,
            clock=ports.clock,
            reports=self._reports,
            effects=effects,
            policy=ports.policy,
            idle_watch=ports.idle_watch,
            notifier=ports.notifier,
            warm_pools=ports.warm_pool_keeper(),
        )
        self._passes = Passes(
            store=ports.store,
            config=ports.config,
            lease=ports.lease,
            clock=ports.clock,
            effects=effects,
            pass_summaries=ports.pass_summaries,
            stuck_after=ports.stuck_after,
            team_usage=ports.team_usage,
            cost_records=ports.cost_records,
            prices=ports.prices,
            durations=ports.durations,
            spot_interruptions=ports.spot_interruptions,
            warm_pools=ports.warm_pools,
        )

    def report(self, job_name: str, attempt_number: int, status: TrainingJobStatus) -> ReportOutcome:
        return self._reports.report(job_name, attempt_number, status)

    def report_outside(self, detail: Mapping[str, Any]) -> ReportOutcome:
        return self._reports.report_outside(detail)

    def reconcile(self) -> Reconciliation:
        return self._reconciler.reconcile()

    def schedule(
        self, *, lease_for: timedelta | None = None, time_left: Callable[[], float] | None = None
    ) -> PassReport:
        return self._passes.schedule(lease_for=lease_for, time_left=time_left)
