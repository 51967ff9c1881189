"""The queue table's pool items: what holds each pool's instances, readable by key.

* Each pool has a usage item (`#pool#<instance type>`) whose `live` string set names the live jobs
  holding its instances. The job store changes a job and its pools' `live` sets in one
  TransactWriteItems (`live_updates`), so at every committed moment a job is live exactly when its
  pools name it.
* **Training jobs outside the queue** are kept in the same items (`outside`, elements
  `<training job>=<instances>`) from their state-change events, and replaced by what SageMaker lists
  during reconciliation.
* The registry item `#pools` names every pool a job was submitted to (a spot job's spot pools
  `<type>:spot` included) or an outside job used, so a pass knows which usage items exist without
  a scan; and, one attribute `team#<value>` each (the
  epoch second of the latest submission), every team tag value jobs were submitted with while
  quotas were configured, so a pass knows which `pending-by-team` partitions may hold jobs, those of
  removed teams included. Only then (submission asks the store to): submission then refuses values
  the configuration does not name, so the operator's teams bound the item; without quotas it
  accepts any value, and registering each would let one user grow the item to DynamoDB's 400 KB
  item limit, after which every submission fails. A value is registered before the job is written,
  where registering a known one changes nothing (a refused submission leaves the table as it was),
  and its time set after the job is written. A pass forgets a value the configuration does not name
  once it finds no job of it pending, an hour or more after its latest submission
  (service/passes.py).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.dynamodb_errors import condition_failed, unavailable_as_typed
from smq_lambda.adapters.dynamodb_table import batch_get, get_item, transaction_busy
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import LIVE_STATES

POOLS_KEY = "#pools"
POOL_KEY_PREFIX = "#pool#"
"""Job names never contain '#', so neither key can be a job's; they carry no indexed attribute, so
they are in no index, and no TTL."""
OUTSIDE_SEPARATOR = "="
TEAM_TAG_PREFIX = "team#"
"""Tag values never contain '#' (SageMaker's tag value pattern), so no attribute is two values'."""


@dataclass(frozen=True)
class PoolHolders:
    """What the pool items say holds the pools' instances."""

    pools: frozenset[str]
    """Every registered pool."""
    live_names: frozenset[str]
    """The live jobs the pools' `live` sets name."""
    outside: dict[str, int]
    """Instances per pool held by training jobs outside the queue (pools with none left out)."""
    team_tags: dict[str, int]
    """Every registered team tag value, with the epoch second of its latest submission."""


class PoolHolderItems:
    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def read(self) -> PoolHolders:
        """The registry, then every pool's usage item: by key, strongly consistent."""
        registry = get_item(self._client, self._table, POOLS_KEY) or {}
        pools = set(registry["pools"]["SS"]) if "pools" in registry else set()
        team_tags = {
            name.removeprefix(TEAM_TAG_PREFIX): int(value["N"])
            for name, value in registry.items()
            if name.startswith(TEAM_TAG_PREFIX)
        }
        live_names: set[str] = set()
        outside: dict[str, int] = {}
        for item in batch_get(self._client, self._table, [pool_key(pool) for pool in sorted(pools)]):
            pool = item["name"]["S"].removeprefix(POOL_KEY_PREFIX)
            live_names.update(item.get("live", {}).get("SS", []))
            held = sum(outside_count(entry) for entry in item.get("outside", {}).get("SS", []))
            if held:
                outside[pool] = held
        return PoolHolders(
            pools=frozenset(pools), live_names=frozenset(live_names), outside=outside, team_tags=team_tags
        )

    def registered(self) -> set[str]:
        item = get_item(self._client, self._table, POOLS_KEY)
        return set(item["pools"]["SS"]) if item is not None and "pools" in item else set()

    def register(self, pools: Collection[str], *, team: str | None = None, at: int = 0) -> None:
        """Name the pools, and the team tag value (registered at epoch second `at` unless it is
        already), in the registry before any job or outside job of them is written: one UpdateItem."""
        if not pools:
            return
        expression = "ADD #pools :pools"
        attribute_names = {"#pools": "pools"}
        values: dict[str, Any] = {":pools": {"SS": sorted(pools)}}
        if team:
            expression += " SET #team = if_not_exists(#team, :at)"
            attribute_names["#team"] = f"{TEAM_TAG_PREFIX}{team}"
            values[":at"] = {"N": str(at)}
        with unavailable_as_typed(transaction_busy):
            self._client.update_item(
                TableName=self._table,
                Key={"name": {"S": POOLS_KEY}},
                UpdateExpression=expression,
                ExpressionAttributeNames=attribute_names,
                ExpressionAttributeValues=values,
            )

    def submitted_team(self, team: str, at: int) -> None:
        """A job of the team tag value was written, submitted at epoch second `at`."""
        with unavailable_as_typed(transaction_busy):
            self._client.update_item(
                TableName=self._table,
                Key={"name": {"S": POOLS_KEY}},
                UpdateExpression="SET #team = :at",
                ExpressionAttributeNames={"#team": f"{TEAM_TAG_PREFIX}{team}"},
                ExpressionAttributeValues={":at": {"N": str(at)}},
            )

    def forget_team(self, team: str, at: int) -> None:
        """Remove the team tag value if its latest submission is still the one of epoch second `at`."""
        try:
            with unavailable_as_typed(transaction_busy):
                self._client.update_item(
                    TableName=self._table,
                    Key={"name": {"S": POOLS_KEY}},
                    UpdateExpression="REMOVE #team",
                    ConditionExpression="#team = :at",
                    ExpressionAttributeNames={"#team": f"{TEAM_TAG_PREFIX}{team}"},
                    ExpressionAttributeValues={":at": {"N": str(at)}},
                )
        except ClientError as exc:
            if not condition_failed(exc):
                raise

    def live_updates(self, job: Job) -> list[dict[str, Any]]:
        """The job's name added to (live) or removed from (otherwise) each of its pools' `live` sets:
        actions of the transaction that saves the job. A flexible job back in the queue needs its
        listed pool again, not its attempt's: it is removed from the pool its attempt held too."""
        operation = "ADD" if job.state in LIVE_STATES else "DELETE"
        members = {":member": {"SS": [job.name]}}
        pools = dict.fromkeys(job.demand)
        if operation == "DELETE" and job.where.selected is not None:
            pools.update(dict.fromkeys(job.where.selected.demand))
        return [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": {"name": {"S": pool_key(pool)}},
                    "UpdateExpression": f"{operation} #live :member",
                    "ExpressionAttributeNames": {"#live": "live"},
                    "ExpressionAttributeValues": members,
                }
            }
            for pool in pools
        ]

    def record_outside(self, training_job_name: str, demand: Mapping[str, int], *, holding: bool) -> None:
        """Add (or remove) `<training job>=<instances>` in each pool's `outside` set."""
        if holding:
            self.register(demand)
        operation = "ADD" if holding else "DELETE"
        for pool, count in demand.items():
            with unavailable_as_typed(transaction_busy):
                self._client.update_item(
                    TableName=self._table,
                    Key={"name": {"S": pool_key(pool)}},
                    UpdateExpression=f"{operation} #outside :entry",
                    ExpressionAttributeNames={"#outside": "outside"},
                    ExpressionAttributeValues={":entry": {"SS": [outside_entry(training_job_name, count)]}},
                )

    def replace_outside(self, jobs: Mapping[str, Mapping[str, int]]) -> None:
        """Set every known pool's `outside` set to what `jobs` holds there (removed when empty)."""
        entries: dict[str, list[str]] = {}
        for name, demand in jobs.items():
            for pool, count in demand.items():
                entries.setdefault(pool, []).append(outside_entry(name, count))
        self.register(entries)
        for pool in sorted(self.registered() | set(entries)):
            request: dict[str, Any] = {
                "TableName": self._table,
                "Key": {"name": {"S": pool_key(pool)}},
                "ExpressionAttributeNames": {"#outside": "outside"},
            }
            if entries.get(pool):
                request["UpdateExpression"] = "SET #outside = :entries"
                request["ExpressionAttributeValues"] = {":entries": {"SS": sorted(entries[pool])}}
            else:
                request["UpdateExpression"] = "REMOVE #outside"
            with unavailable_as_typed(transaction_busy):
                self._client.update_item(**request)


def pool_key(pool: str) -> str:
    return f"{POOL_KEY_PREFIX}{pool}"


def outside_entry(training_job_name: str, instances: int) -> str:
    return f"{training_job_name}{OUTSIDE_SEPARATOR}{instances}"


def outside_count(entry: str) -> int:
    """The instances of an `outside` element (training job names never contain '=')."""
    return int(entry.rpartition(OUTSIDE_SEPARATOR)[2])
