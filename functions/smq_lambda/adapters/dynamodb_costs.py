"""The CostLedger port as items of the queue table: one per recorded attempt, one per UTC day and
report dimension holding that day's totals per group.

    name        S  `#cost-attempt#<training job name>`: the attempt is recorded (job names cannot
                   contain '#', so no key here can collide with a job)
    spend_usd   N  ... and the attempt's other figures and groups (`groups` M), for audit
    expires_at  N  the table's TTL: SPEND_KEPT_DAYS after the end

    name        S  `#costs#<YYYY-MM-DD>#<dimension>` (`team`, `owner`, `tag:<key>`)
    <code>:<group>  N  one figure of one group, summed: FIGURE_CODES gives the code of each
                   CostFigures field (`s:vision` is the spend of team vision); a figure never
                   added is absent and reads as 0
    expires_at  N  SPEND_KEPT_DAYS after the day: how far back reports reach

Exactly once: the attempt item is put with attribute_not_exists(name) in ONE TransactWriteItems
with the ADD updates of its day items (one per dimension), so a duplicate or concurrent record of
the attempt cancels the whole transaction (record answers False) and a crash never half-counts.
Each figure is a top-level number attribute because ADD only creates top-level attributes (a map
member's parent must exist). Numbers are fixed-point decimal text, so DynamoDB sums them exactly.

Size: a day item holds the groups of one dimension whose attempts ended that day, each about
7 × (len(group) + 12) bytes at most (only figures above zero are written), so the 400 KB item limit
bounds it at about 1,300 groups of 30 characters, or 200 of 256 (the longest tag value), per
dimension per day. Past that, DynamoDB refuses the transaction (ValidationException, raised as it
is) and the report that told of the end is retried: a cost tag must name a tag of few values
(project, cost centre), never a per-run one. Reports read `days` items of the one dimension asked.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import UTC, date, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.dynamodb_errors import error_code, unavailable_as_typed
from smq_lambda.adapters.dynamodb_table import (
    CONDITION_FAILED_REASON,
    TRANSACTION_CANCELED,
    batch_get,
    cancellation_codes,
    transaction_busy,
)
from smq_lambda.domain.cost_totals import SPEND_KEPT_DAYS, CostFigures
from smq_lambda.domain.costs import AttemptCost
from smq_lambda.errors import ServiceUnavailable

ATTEMPT_PREFIX = "#cost-attempt#"
DAY_PREFIX = "#costs#"
FIGURE_CODES = {
    "spend_usd": "s",
    "on_demand_equivalent_usd": "o",
    "spot_savings_usd": "v",
    "waste_usd": "w",
    "idle_stop_avoided_usd": "i",
    "attempts": "n",
    "unpriced_attempts": "u",
}
"""The attribute prefix of each CostFigures field in a day item. Short: it repeats per group."""
COUNT_FIELDS = frozenset({"attempts", "unpriced_attempts"})
RECORD_ROUNDS = 4
"""Tries of one record whose transaction met another on a day item (attempts of one team ending
together): under the same client token, so a try that landed but whose answer was lost succeeds."""


class DynamoCostLedger:
    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def record(self, cost: AttemptCost, groups: Mapping[str, str]) -> bool:
        day = cost.ended_at.astimezone(UTC).date()
        figures = CostFigures.of(cost)
        actions = [{"Put": self._attempt_put(cost, groups, day)}]
        actions += [{"Update": self._day_update(day, dimension, group, figures)} for dimension, group in groups.items()]
        token = uuid.uuid4().hex
        for round_number in range(RECORD_ROUNDS):
            try:
                with unavailable_as_typed(transaction_busy):
                    self._client.transact_write_items(TransactItems=actions, ClientRequestToken=token)
                return True
            except ClientError as exc:
                if error_code(exc) == TRANSACTION_CANCELED and cancellation_codes(exc)[:1] == [CONDITION_FAILED_REASON]:
                    return False
                raise
            except ServiceUnavailable:
                if round_number == RECORD_ROUNDS - 1:
                    raise
                time.sleep(0.02 * 2**round_number)
        raise AssertionError("unreachable: the last round returns or raises")

    def totals(self, dimension: str, days: Sequence[date]) -> dict[str, CostFigures]:
        keys = sorted({day_key(day, dimension) for day in days})
        result: dict[str, CostFigures] = {}
        for item in batch_get(self._client, self._table, keys):
            for group, figures in _day_figures(item).items():
                result[group] = result.get(group, CostFigures()).plus(figures)
        return result

    def _attempt_put(self, cost: AttemptCost, groups: Mapping[str, str], day: date) -> dict[str, Any]:
        item: dict[str, Any] = {
            "name": {"S": f"{ATTEMPT_PREFIX}{cost.training_job_name}"},
            "ended_at": {"S": cost.ended_at.astimezone(UTC).isoformat()},
            "spot": {"BOOL": cost.spot},
            "billable_s": {"N": str(cost.billable_s)},
            "training_s": {"N": str(cost.training_s)},
            "groups": {"M": {dimension: {"S": group} for dimension, group in groups.items()}},
            "expires_at": {"N": str(_epoch(day + timedelta(days=SPEND_KEPT_DAYS)))},
        }
        for part in fields(AttemptCost):
            value = getattr(cost, part.name)
            if part.name.endswith("_usd") and value is not None:
                item[part.name] = {"N": _dollars(value)}
        return {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#name)",
            "ExpressionAttributeNames": {"#name": "name"},
        }

    def _day_update(self, day: date, dimension: str, group: str, figures: CostFigures) -> dict[str, Any]:
        names = {"#expires_at": "expires_at"}
        values: dict[str, Any] = {":expires_at": {"N": str(_epoch(day + timedelta(days=SPEND_KEPT_DAYS)))}}
        additions = []
        for index, (field_name, code) in enumerate(FIGURE_CODES.items()):
            value = getattr(figures, field_name)
            if value <= 0:
                continue
            names[f"#f{index}"] = f"{code}:{group}"
            values[f":f{index}"] = {"N": str(value) if field_name in COUNT_FIELDS else _dollars(value)}
            additions.append(f"#f{index} :f{index}")
        return {
            "TableName": self._table,
            "Key": {"name": {"S": day_key(day, dimension)}},
            "UpdateExpression": f"SET #expires_at = :expires_at ADD {', '.join(additions)}",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }


def day_key(day: date, dimension: str) -> str:
    return f"{DAY_PREFIX}{day.isoformat()}#{dimension}"


def _day_figures(item: Mapping[str, Any]) -> dict[str, CostFigures]:
    """Per group, the figures a day item holds."""
    field_of = {code: field_name for field_name, code in FIGURE_CODES.items()}
    members: dict[str, dict[str, Any]] = {}
    for attribute, value in item.items():
        code, separator, group = attribute.partition(":")
        if separator and code in field_of and "N" in value:
            field_name = field_of[code]
            number = int(value["N"]) if field_name in COUNT_FIELDS else float(value["N"])
            members.setdefault(group, {})[field_name] = number
    return {group: CostFigures(**parts) for group, parts in members.items()}


def _dollars(value: float) -> str:
    """Fixed-point text to a billionth of a dollar; never negative (a total only ever grows)."""
    return f"{max(value, 0.0):.9f}"


def _epoch(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
