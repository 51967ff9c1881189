"""The CostRecords port as items of the queue table: one per recorded attempt, one per UTC day and
report dimension holding that day's totals per group.

    name        S  `#cost-attempt#<training job name>`: the attempt is recorded (job names cannot
                   contain '#', so no key here can collide with a job)
    spend_usd   N  ... and the attempt's other figures and groups (`groups` M), for audit
    pending     SS the tag dimensions not yet added to their day items (absent once all are)
    expires_at  N  the table's TTL: SPEND_KEPT_DAYS after the end

    name        S  `#costs#<YYYY-MM-DD>#<dimension>` (`team`, `owner`, `tag:<key>`)
    <code>:<group>  N  one figure of one group, summed: FIGURE_CODES gives the code of each
                   CostFigures field (`s:vision` is the spend of team vision); a figure never
                   added is absent and reads as 0
    named       SS of a tag dimension: the groups the day keeps apart (at most MAX_TAG_GROUPS_PER_DAY)
    expires_at  N  SPEND_KEPT_DAYS after the day: how far back reports reach

Exactly once, and no tag in the way of the team's total. The attempt item is put with
attribute_not_exists(name) in ONE TransactWriteItems with the ADD updates of its team and owner day
items, so a duplicate or concurrent record of the attempt cancels the whole transaction (its first
action's condition fails) and a crash never half-counts. The attempt item lists its tag dimensions
in `pending`; each is then added in a transaction of its own that also deletes it from `pending`
on the condition that it is still there, so it counts once however often it is tried, and a tag
that cannot be written never keeps the team's spend (budgets, the dashboard) from counting. One
left pending (throttled, or a day item written before this bound that is full) makes `record`
raise CostDimensionsPending once the others were tried; any later record of the attempt (its report
delivered again) finds it in the stored item and adds it, with the figures first recorded. Each
figure is a top-level number attribute because ADD only creates top-level attributes (a map
member's parent must exist). Numbers are fixed-point decimal text, so DynamoDB sums them exactly.

Size: a day item holds the groups of one dimension whose attempts ended that day, each at most
7 × (2 + bytes(group) + 21) bytes (a name and a number of at most 38 digits per figure above zero),
and a tag's group its bytes again in `named`. A tag's day keeps at most
MAX_TAG_GROUPS_PER_DAY groups apart (the condition on `named` admits a new one only while there is
room; later values count in OTHER) of at most MAX_TAG_GROUP_BYTES: under 250 KB, whatever the
tag's values, against DynamoDB's 400 KB. Team and owner groups are kept whole (budgets and
access rules match them): a team or owner day item holds about 1,300 groups of 30 characters.
Reports read `days` items of the one dimension asked.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, date, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.attribute_values import Item
from smq_lambda.adapters.dynamodb_errors import error_code, unavailable_as_typed
from smq_lambda.adapters.dynamodb_table import (
    CONDITION_FAILED_REASON,
    TRANSACTION_CANCELED,
    batch_get,
    cancellation_codes,
    get_item,
    transaction_busy,
)
from smq_lambda.domain.costs.cost_totals import (
    MAX_TAG_GROUPS_PER_DAY,
    OTHER,
    SPEND_KEPT_DAYS,
    TAG_DIMENSION_PREFIX,
    CostFigures,
    tag_group,
)
from smq_lambda.domain.costs.costs import AttemptCost
from smq_lambda.errors import CostDimensionsPending, ServiceUnavailable

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
"""Tries of one transaction that met another on a day item (attempts of one team ending together):
under the same client token, so a try that landed but whose answer was lost succeeds."""


class DynamoCostRecords:
    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def record(self, cost: AttemptCost, groups: Mapping[str, str]) -> bool:
        groups = {dimension: _bounded(dimension, group) for dimension, group in groups.items()}
        day = cost.ended_at.astimezone(UTC).date()
        figures = CostFigures.of(cost)
        tags = {dimension: group for dimension, group in groups.items() if dimension.startswith(TAG_DIMENSION_PREFIX)}
        actions = [{"Put": self._attempt_put(cost, groups, day, pending=tags)}]
        actions += [
            {"Update": self._day_update(day, dimension, group, figures)}
            for dimension, group in groups.items()
            if dimension not in tags
        ]
        recorded = self._transact(actions)[:1] != [CONDITION_FAILED_REASON]
        if not recorded:
            stored = get_item(self._client, self._table, _attempt_key(cost.training_job_name)) or {}
            if "pending" not in stored:
                return False
            day, figures, tags = _as_recorded(stored)
        self._add_tags(cost.training_job_name, day, figures, tags, recorded=recorded)
        return recorded

    def totals(self, dimension: str, days: Sequence[date]) -> dict[str, CostFigures]:
        keys = sorted({day_key(day, dimension) for day in days})
        result: dict[str, CostFigures] = {}
        for item in batch_get(self._client, self._table, keys):
            for group, figures in _day_figures(item).items():
                result[group] = result.get(group, CostFigures()).plus(figures)
        return result

    def _add_tags(
        self, training_job_name: str, day: date, figures: CostFigures, tags: Mapping[str, str], *, recorded: bool
    ) -> None:
        """Add each pending tag dimension on its own; raise CostDimensionsPending for those that
        failed once all were tried (a throttled table first as the cause: trying again helps)."""
        failures: dict[str, Exception] = {}
        for dimension, group in tags.items():
            try:
                self._add_tag(training_job_name, day, figures, dimension, group)
            except (ClientError, ServiceUnavailable) as exc:
                failures[dimension] = exc
        if failures:
            errors = list(failures.values())
            cause = next((error for error in errors if isinstance(error, ServiceUnavailable)), errors[0])
            raise CostDimensionsPending(training_job_name, sorted(failures), recorded=recorded) from cause

    def _add_tag(self, training_job_name: str, day: date, figures: CostFigures, dimension: str, group: str) -> None:
        """Add the figures to the tag's day item while the attempt still lists the dimension as
        pending; in OTHER when the day keeps MAX_TAG_GROUPS_PER_DAY other groups apart already."""
        done = self._pending_done(training_job_name, dimension)
        codes = self._transact([{"Update": done}, {"Update": self._day_update(day, dimension, group, figures)}])
        if codes == ["None", CONDITION_FAILED_REASON]:
            self._transact([{"Update": done}, {"Update": self._day_update(day, dimension, OTHER, figures)}])

    def _transact(self, actions: list[dict[str, Any]]) -> list[str]:
        """Write `actions` at once: [] when they were, else the cancellation reason of each when a
        condition failed. A transaction that met another is tried again."""
        token = uuid.uuid4().hex
        for round_number in range(RECORD_ROUNDS):
            try:
                with unavailable_as_typed(transaction_busy):
                    self._client.transact_write_items(TransactItems=actions, ClientRequestToken=token)
                return []
            except ClientError as exc:
                codes = cancellation_codes(exc)
                if error_code(exc) == TRANSACTION_CANCELED and CONDITION_FAILED_REASON in codes:
                    return codes
                raise
            except ServiceUnavailable:
                if round_number == RECORD_ROUNDS - 1:
                    raise
                time.sleep(0.02 * 2**round_number)
        raise AssertionError("unreachable: the last round returns or raises")

    def _attempt_put(
        self, cost: AttemptCost, groups: Mapping[str, str], day: date, *, pending: Collection[str]
    ) -> dict[str, Any]:
        item: dict[str, Any] = {
            "name": {"S": _attempt_key(cost.training_job_name)},
            "ended_at": {"S": cost.ended_at.astimezone(UTC).isoformat()},
            "spot": {"BOOL": cost.spot},
            "billable_s": {"N": str(cost.billable_s)},
            "training_s": {"N": str(cost.training_s)},
            "groups": {"M": {dimension: {"S": group} for dimension, group in groups.items()}},
            "expires_at": {"N": str(_epoch(day + timedelta(days=SPEND_KEPT_DAYS)))},
        }
        if pending:
            item["pending"] = {"SS": sorted(pending)}
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
        """Add `figures` to `group`'s; a tag's group other than OTHER only while the day keeps it
        apart already or has room for one more."""
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
        update: dict[str, Any] = {"TableName": self._table, "Key": {"name": {"S": day_key(day, dimension)}}}
        if dimension.startswith(TAG_DIMENSION_PREFIX) and group != OTHER:
            names["#named"] = "named"
            values.update(
                {":group": {"S": group}, ":groups": {"SS": [group]}, ":most": {"N": str(MAX_TAG_GROUPS_PER_DAY)}}
            )
            additions.append("#named :groups")
            update["ConditionExpression"] = (
                "contains(#named, :group) OR attribute_not_exists(#named) OR size(#named) < :most"
            )
        return {
            **update,
            "UpdateExpression": f"SET #expires_at = :expires_at ADD {', '.join(additions)}",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }

    def _pending_done(self, training_job_name: str, dimension: str) -> dict[str, Any]:
        return {
            "TableName": self._table,
            "Key": {"name": {"S": _attempt_key(training_job_name)}},
            "UpdateExpression": "DELETE #pending :dimensions",
            "ConditionExpression": "contains(#pending, :dimension)",
            "ExpressionAttributeNames": {"#pending": "pending"},
            "ExpressionAttributeValues": {":dimensions": {"SS": [dimension]}, ":dimension": {"S": dimension}},
        }


def day_key(day: date, dimension: str) -> str:
    return f"{DAY_PREFIX}{day.isoformat()}#{dimension}"


def _attempt_key(training_job_name: str) -> str:
    return f"{ATTEMPT_PREFIX}{training_job_name}"


def _bounded(dimension: str, group: str) -> str:
    """A tag's group cut to MAX_TAG_GROUP_BYTES, whoever built it, so no day item outgrows its bound."""
    return tag_group(group) if dimension.startswith(TAG_DIMENSION_PREFIX) else group


def _as_recorded(stored: Item) -> tuple[date, CostFigures, dict[str, str]]:
    """From a recorded attempt's item: its day, its figures as first recorded, and the groups of
    the tag dimensions still pending."""
    ended = datetime.fromisoformat(stored["ended_at"]["S"])
    dollars = {
        part.name: float(stored[part.name]["N"]) if part.name in stored else None
        for part in fields(AttemptCost)
        if part.name.endswith("_usd")
    }
    cost = AttemptCost(
        training_job_name=stored["name"]["S"].removeprefix(ATTEMPT_PREFIX),
        ended_at=ended,
        spot=stored["spot"]["BOOL"],
        billable_s=int(stored["billable_s"]["N"]),
        training_s=int(stored["training_s"]["N"]),
        **dollars,
    )
    groups = stored["groups"]["M"]
    return (
        ended.date(),
        CostFigures.of(cost),
        {dimension: groups[dimension]["S"] for dimension in stored["pending"]["SS"]},
    )


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
