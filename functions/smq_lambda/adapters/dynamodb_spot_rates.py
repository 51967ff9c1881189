"""The SpotInterruptionBook port as one item of the queue table (domain/placements/spot_rates.py).

A report that shows an attempt's new spot interruptions adds them to the book and writes it
conditional on the version it read: two reports of the same interruption (a duplicate event and
reconciliation's describe) cannot both count it (the loser gets VersionConflict, reads the winner's
book, and finds nothing new).

    name     S  `#spot-interruptions`: job names cannot contain '#', so it can never collide with a job
    version  N  incremented by every save
    types    M  {instance type: L of S}: the times of its recent interruptions (item_codec.format_time)
    counted  M  {training job name: M (n N, at S)}: the interruptions of the attempt counted so far

The item carries none of the indexed attributes, so it is in no index, and no TTL.
"""

from __future__ import annotations

from typing import Any

from smq_lambda.adapters.attribute_values import format_time, parse_time
from smq_lambda.adapters.dynamodb_errors import unavailable_as_typed, written
from smq_lambda.domain.placements.spot_rates import Counted, SpotInterruptions
from smq_lambda.errors import VersionConflict

SPOT_INTERRUPTIONS_KEY = {"name": {"S": "#spot-interruptions"}}


class DynamoSpotInterruptionBook:
    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def load(self) -> SpotInterruptions:
        with unavailable_as_typed():
            response = self._client.get_item(TableName=self._table, Key=SPOT_INTERRUPTIONS_KEY, ConsistentRead=True)
        item = response.get("Item")
        if item is None:
            return SpotInterruptions()
        return SpotInterruptions(
            by_type={
                kind: tuple(parse_time(time["S"]) for time in times["L"]) for kind, times in item["types"]["M"].items()
            },
            counted={
                name: Counted(int(entry["M"]["n"]["N"]), parse_time(entry["M"]["at"]["S"]))
                for name, entry in item["counted"]["M"].items()
            },
            version=int(item["version"]["N"]),
        )

    def save(self, book: SpotInterruptions, *, previous: SpotInterruptions) -> None:
        request: dict[str, Any] = {
            "TableName": self._table,
            "Item": {
                **SPOT_INTERRUPTIONS_KEY,
                "version": {"N": str(book.version)},
                "types": {
                    "M": {
                        kind: {"L": [{"S": format_time(time)} for time in times]}
                        for kind, times in book.by_type.items()
                    }
                },
                "counted": {
                    "M": {
                        name: {"M": {"n": {"N": str(entry.interruptions)}, "at": {"S": format_time(entry.at)}}}
                        for name, entry in book.counted.items()
                    }
                },
            },
        }
        if previous.version == 0:
            request["ConditionExpression"] = "attribute_not_exists(version)"
        else:
            request["ConditionExpression"] = "version = :previous"
            request["ExpressionAttributeValues"] = {":previous": {"N": str(previous.version)}}
        if not written(self._client.put_item, **request):
            raise VersionConflict(SPOT_INTERRUPTIONS_KEY["name"]["S"])
