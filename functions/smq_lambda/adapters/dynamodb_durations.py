"""The DurationStore port as items of the queue table, one per summary (forecast/durations.py).

    name     S  `#durations#<level>#<key>` (`#durations#family#<owner>#<family>`,
                `#durations#owner-pool#<owner>#<instance type>`, `#durations#pool#<instance type>`;
                earlier releases keyed the last two by pool, so their spot pools' and training
                plans' items, `...#ml.p5.48xlarge:spot`, `...#plan:<name>`, are still read, never
                written): job names cannot contain '#', so a summary can never collide with a job
    seconds  L  of N: the recent durations, newest last (at most MAX_SAMPLES)
    counted  L  of S: the ids of the jobs counted (at most MAX_COUNTED_JOBS)
    version  N  incremented by every write; each write is conditional on the version it read

An item holds at most 50 numbers and 50 job ids (about 3 KB), is in no index and has no TTL: a
family that stops running keeps its last summary. A completion is added by read, then conditional
put, retried on a lost race; a job id already counted writes nothing, so a repeated report of the
same completion adds nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from smq_lambda.adapters.attribute_values import Item
from smq_lambda.adapters.dynamodb_errors import written
from smq_lambda.adapters.dynamodb_table import batch_get, get_item
from smq_lambda.errors import VersionConflict
from smq_lambda.forecast.durations import DurationHistory, DurationKey, DurationSummary

KEY_PREFIX = "#durations#"
ADD_ATTEMPTS = 5
"""Races lost before an add gives up (VersionConflict): only concurrent completions of one key race."""


class DynamoDurationStore:
    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def load(self, keys: Collection[DurationKey]) -> DurationHistory:
        wanted = {item_key(key): key for key in keys}
        items = batch_get(self._client, self._table, sorted(wanted))
        return DurationHistory({wanted[item["name"]["S"]]: _summary(item) for item in items})

    def add(self, key: DurationKey, job_id: str, seconds: float) -> None:
        name = item_key(key)
        for _ in range(ADD_ATTEMPTS):
            item = get_item(self._client, self._table, name)
            before = _summary(item) if item is not None else DurationSummary()
            after = before.with_duration(job_id, seconds)
            if after is before:
                return
            version = int(item["version"]["N"]) if item is not None else 0
            if self._put(name, after, version):
                return
        raise VersionConflict(name)

    def _put(self, name: str, summary: DurationSummary, version: int) -> bool:
        """Write `summary` if the item is still at `version` (0: absent); False on a lost race."""
        condition: dict[str, Any] = (
            {"ConditionExpression": "attribute_not_exists(#name)", "ExpressionAttributeNames": {"#name": "name"}}
            if version == 0
            else {
                "ConditionExpression": "#version = :version",
                "ExpressionAttributeNames": {"#version": "version"},
                "ExpressionAttributeValues": {":version": {"N": str(version)}},
            }
        )
        item: Item = {
            "name": {"S": name},
            "seconds": {"L": [{"N": f"{value:.3f}"} for value in summary.seconds]},
            "counted": {"L": [{"S": job_id} for job_id in summary.counted]},
            "version": {"N": str(version + 1)},
        }
        return written(self._client.put_item, TableName=self._table, Item=item, **condition)


def item_key(key: DurationKey) -> str:
    return f"{KEY_PREFIX}{key.item_key}"


def _summary(item: Item) -> DurationSummary:
    return DurationSummary(
        seconds=tuple(float(value["N"]) for value in item.get("seconds", {}).get("L", ())),
        counted=tuple(value["S"] for value in item.get("counted", {}).get("L", ())),
    )
