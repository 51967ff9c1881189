"""The scheduler's cost wiring, built once per cold start with the scheduler (handlers/scheduler.py):
the cost ledger, the prices in force, and what listens for attempts' ends to price them.

One ledger and one price source serve both sides: the listeners record each ended attempt's cost
(service/cost_recorder.py) and warn teams at their budget's thresholds (service/budget_warnings.py);
the passes read the month's spend back from the same ledger to hold jobs by budget. The adapters
are imported here, on the first invocation, not at import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from smq_lambda.handlers.aws_clients import client

if TYPE_CHECKING:
    from smq_lambda.ports import (
        ConfigSource,
        CostLedger,
        Notifier,
        PolicySource,
        PriceSource,
        TrainingEndListener,
        TrainingService,
    )
    from smq_lambda.settings import Settings


@dataclass(frozen=True)
class CostWiring:
    ledger: CostLedger
    prices: PriceSource
    listeners: tuple[TrainingEndListener, ...]
    """Told of each own attempt's end: the cost recorder, then the budget warnings (which read what
    the recorder wrote)."""


def cost_wiring(
    settings: Settings,
    config: ConfigSource,
    training: TrainingService,
    policy: PolicySource,
    notifier: Notifier | None,
    clock: Callable[[], datetime],
) -> CostWiring:
    """The stack's cost ledger and prices (the queue table, SSM's document over the daily refresh
    over the shipped defaults), and the listeners that price and warn."""
    from smq_lambda.adapters.dynamodb_budget_marks import DynamoBudgetWarningMarks
    from smq_lambda.adapters.dynamodb_costs import DynamoCostLedger
    from smq_lambda.adapters.price_source import stack_price_source
    from smq_lambda.service.budget_warnings import BudgetWarnings
    from smq_lambda.service.cost_recorder import CostRecorder

    dynamodb = client("dynamodb")
    ledger = DynamoCostLedger(settings.table_name, dynamodb)
    prices = stack_price_source(settings, config, dynamodb)
    recorder = CostRecorder(ledger=ledger, prices=prices, config=config, clock=clock, training=training, policy=policy)
    marks = DynamoBudgetWarningMarks(settings.table_name, dynamodb)
    warnings = BudgetWarnings(config, ledger, marks, notifier, clock)
    return CostWiring(ledger, prices, (recorder, warnings))
