"""The TeamUsageHistory port as one item of the queue table.

Each pass with team quotas adds the interval since the previous pass to the teams' decayed usage
(`domain.config.teams.decay_usage`) and writes the result here, conditional on the record it started from
still being there (by its `at`): two passes that counted the same interval cannot both add it (the
loser gets VersionConflict, and the next pass counts from the winner's record).

    name   S  `#team-usage`: job names cannot contain '#', so it can never collide with a job
    at     S  the end of the interval counted (fixed-width UTC text, see item_codec.format_time)
    usage  M  {team: N} decayed instance-seconds

The item carries none of the indexed attributes, so it is in no index, and no TTL.
"""

from __future__ import annotations

from typing import Any

from smq_lambda.adapters.attribute_values import format_time, parse_time
from smq_lambda.adapters.dynamodb_errors import unavailable_as_typed, written
from smq_lambda.errors import VersionConflict
from smq_lambda.pass_summary import TeamUsageRecord

TEAM_USAGE_KEY = {"name": {"S": "#team-usage"}}
_NAMES = {"#at": "at"}
"""`at` is a DynamoDB reserved word."""


class DynamoTeamUsageHistory:
    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def load(self) -> TeamUsageRecord | None:
        with unavailable_as_typed():
            response = self._client.get_item(TableName=self._table, Key=TEAM_USAGE_KEY, ConsistentRead=True)
        item = response.get("Item")
        if item is None:
            return None
        usage = {team: float(value["N"]) for team, value in item.get("usage", {"M": {}})["M"].items()}
        return TeamUsageRecord(usage=usage, at=parse_time(item["at"]["S"]))

    def save(self, record: TeamUsageRecord, *, previous: TeamUsageRecord | None) -> None:
        request: dict[str, Any] = {
            "TableName": self._table,
            "Item": {
                **TEAM_USAGE_KEY,
                "at": {"S": format_time(record.at)},
                "usage": {"M": {team: {"N": _number(value)} for team, value in sorted(record.usage.items())}},
            },
            "ExpressionAttributeNames": _NAMES,
        }
        if previous is None:
            request["ConditionExpression"] = "attribute_not_exists(#at)"
        else:
            request["ConditionExpression"] = "#at = :previous"
            request["ExpressionAttributeValues"] = {":previous": {"S": format_time(previous.at)}}
        if not written(self._client.put_item, **request):
            raise VersionConflict(TEAM_USAGE_KEY["name"]["S"])


def _number(value: float) -> str:
    """Fixed-point text (DynamoDB numbers hold 38 digits; usage is far below 10**30)."""
    return f"{max(value, 0.0):.6f}"
