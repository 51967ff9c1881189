"""The PoolUsageBoard port as one item of the queue table.

Each scheduling pass measures usage anyway (it must, to decide), so it writes what it measured here
and readers (GET /pools) read one item instead of listing and describing SageMaker jobs per request.
The write is conditional on being newer than what is there, so a slow pass that measured earlier
never replaces a later report.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.dynamodb_errors import error_code, unavailable_as_typed
from smq_lambda.ports import PoolMeasure, PoolUsageReport

USAGE_KEY = {"name": {"S": "#pool-usage"}}
"""Job names cannot contain '#', so the report can never collide with a job. It carries none of the
indexed attributes, so it appears in no index, and no TTL: the latest report stays."""
CONDITION_FAILED = "ConditionalCheckFailedException"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
"""Fixed width, so the stored strings sort as the times do (the condition compares them)."""


class DynamoPoolUsageBoard:
    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def publish(self, report: PoolUsageReport) -> None:
        """Store `report` unless a report measured later is already there."""
        with unavailable_as_typed():
            try:
                self._client.put_item(
                    TableName=self._table,
                    Item={**USAGE_KEY, **_to_item(report)},
                    ConditionExpression="attribute_not_exists(measured_at) OR measured_at <= :measured_at",
                    ExpressionAttributeValues={":measured_at": {"S": _time(report.measured_at)}},
                )
            except ClientError as exc:
                if error_code(exc) != CONDITION_FAILED:
                    raise

    def latest(self) -> PoolUsageReport | None:
        with unavailable_as_typed():
            response = self._client.get_item(TableName=self._table, Key=USAGE_KEY)
        item = response.get("Item")
        return None if item is None else _from_item(item)


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def _to_item(report: PoolUsageReport) -> dict[str, Any]:
    return {
        "measured_at": {"S": _time(report.measured_at)},
        "pools": {"L": [{"M": _pool_to_item(pool)} for pool in report.pools]},
    }


def _pool_to_item(pool: PoolMeasure) -> dict[str, Any]:
    capacity = {"NULL": True} if pool.capacity is None else {"N": str(pool.capacity)}
    item = {"pool": {"S": pool.pool}, "capacity": capacity, "in_use": {"N": str(pool.in_use)}}
    if pool.head is not None:
        item["head"] = {"S": pool.head}
    return item


def _from_item(item: dict[str, Any]) -> PoolUsageReport:
    pools = tuple(
        PoolMeasure(
            pool=entry["M"]["pool"]["S"],
            capacity=None if "NULL" in entry["M"]["capacity"] else int(entry["M"]["capacity"]["N"]),
            in_use=int(entry["M"]["in_use"]["N"]),
            head=entry["M"]["head"]["S"] if "head" in entry["M"] else None,
        )
        for entry in item["pools"]["L"]
    )
    measured_at = datetime.strptime(item["measured_at"]["S"], TIME_FORMAT).replace(tzinfo=UTC)
    return PoolUsageReport(pools=pools, measured_at=measured_at)
