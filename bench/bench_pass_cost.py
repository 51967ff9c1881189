"""Cost of one scheduling pass against the depth of the queue.

Run: .venv/bin/python bench/bench_pass_cost.py [--depths 100 1000 10000] [--json FILE]

The real Scheduler, DynamoDB store, pass lease and pass summaries on moto (in-process), over a pool
of 8 instances held by 8 running jobs with N jobs pending behind them. Two passes are measured at
each depth: a steady pass (nothing changed since the last one) and the pass after one running job
completes (its report applied first, as a batch of events would). Counted from botocore's own
requests and answers: items read (returned by GetItem, BatchGetItem, Query and Scan, or counted by
a Select=COUNT Query), items written (each PutItem, UpdateItem and transaction action), DynamoDB
requests and wall time.

The baseline, measured in the same run over the same table, is a store that finds the active jobs
with a Scan, as a queue with no usage items and no bounded queue fronts must. Ratios are baseline / smq.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws
from smq.local.template import load_template, table_definition
from smq_lambda.adapters.dynamodb_lease import DynamoPassLease
from smq_lambda.adapters.dynamodb_pass_summaries import DynamoPassSummaries
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.item_codec import from_item, to_item
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import ACTIVE_STATES, LIVE_STATES, JobState
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.ports import InUse
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.service.scheduler import Scheduler, SchedulerPorts
from tabulate import tabulate

POOL = "ml.p5.48xlarge"
CAPACITY = 8
TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
READ_OPERATIONS = {"GetItem", "BatchGetItem", "Query", "Scan"}
WRITE_OPERATIONS = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


@dataclass
class Counts:
    requests: int = 0
    read: int = 0
    written: int = 0

    def note(self, operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> None:
        if operation not in READ_OPERATIONS | WRITE_OPERATIONS:
            return
        self.requests += 1
        if operation == "GetItem":
            self.read += 1 if "Item" in parsed else 0
        elif operation == "BatchGetItem":
            self.read += sum(len(items) for items in parsed.get("Responses", {}).values())
        elif operation in ("Query", "Scan"):
            self.read += int(parsed.get("ScannedCount", parsed.get("Count", 0)))
        elif operation == "TransactWriteItems":
            self.written += len(params["TransactItems"])
        elif operation == "BatchWriteItem":
            self.written += sum(len(requests) for requests in params["RequestItems"].values())
        else:
            self.written += 1


@dataclass
class Meter:
    """Counts the DynamoDB traffic of one client while `active`."""

    client: Any
    counts: Counts = field(default_factory=Counts)
    active: bool = False
    _params: dict[int, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.client.meta.events.register("provide-client-params.dynamodb.*", self._before)
        self.client.meta.events.register("after-call.dynamodb.*", self._after)

    def _before(self, params: Mapping[str, Any], model: Any, **_: Any) -> None:
        self._params[id(model)] = params

    def _after(self, http_response: Any, parsed: Mapping[str, Any], model: Any, **_: Any) -> None:
        if self.active:
            self.counts.note(model.name, self._params.get(id(model), {}), parsed)

    def measure(self, action: Any) -> tuple[Counts, float]:
        self.counts, self.active = Counts(), True
        started = time.perf_counter()
        try:
            action()
        finally:
            self.active = False
        return self.counts, time.perf_counter() - started


class ScanStore(DynamoJobStore):
    """The baseline: active jobs found by scanning the whole table, every pass."""

    def _scan_active(self) -> list[Job]:
        items = []
        for page in self._client.get_paginator("scan").paginate(TableName=self._table, ConsistentRead=True):
            items.extend(item for item in page["Items"] if item.get("state", {}).get("S") in ACTIVE_STATES)
        return sorted((from_item(item) for item in items), key=lambda job: job.order)

    def in_use(self) -> InUse:
        live = [job for job in self._scan_active() if job.state in LIVE_STATES]
        return InUse(live=live, outside={}, pools=frozenset({POOL}))

    def pending_front(self, pool: str, limit: int, *, team: str | None = None) -> list[Job]:
        return [
            job
            for job in self._scan_active()
            if job.state is JobState.PENDING and job.where.pool == pool and (team is None or (job.team or "") == team)
        ]


class NoSageMaker:
    """Accepts every start; nothing runs outside the queue."""

    def start_attempt(self, job: Job) -> None: ...

    def stop(self, training_job_name: str) -> None: ...

    def describe(self, training_job_name: str) -> TrainingJobStatus | None:
        return None

    def outside_in_progress(self, queue_attempts: Collection[str]) -> dict[str, dict[str, int]]:
        return {}

    def in_progress_since(self, created_after: datetime) -> list[dict[str, Any]]:
        return []


class StaticConfig:
    def load(self) -> SchedulerConfig:
        return SchedulerConfig(pools={POOL: CAPACITY})


def job(name: str, priority: int, submitted_at: datetime, pool: str = POOL) -> Job:
    request = {
        "TrainingJobName": name,
        "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "trainer:latest", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
        "ResourceConfig": {"InstanceType": pool, "InstanceCount": 1, "VolumeSizeInGB": 100},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        "HyperParameters": {"epochs": "10", "learning-rate": "0.0003", "model": "vit_base_patch16_224"},
    }
    return Job(
        name=name,
        job_id=uuid.uuid4().hex,
        state=JobState.PENDING,
        priority=priority,
        submitted_at=submitted_at,
        demand={pool: 1},
        owner="arn:aws:iam::123456789012:role/researcher",
        request=request,
    )


def fill(client: Any, table: str, depth: int) -> list[Job]:
    """CAPACITY running jobs and `depth` pending ones, written in batches; returns the running ones."""
    running = [
        lifecycle.mark_running(lifecycle.start(job(f"run-{index}", 5, EPOCH), EPOCH, reason="fits"), EPOCH)
        for index in range(CAPACITY)
    ]
    pending = [job(f"wait-{index:05d}", index % 3, EPOCH + timedelta(seconds=index)) for index in range(depth)]
    items = [to_item(item, ttl_days=30) for item in [*running, *pending]]
    for start in range(0, len(items), 25):
        client.batch_write_item(
            RequestItems={table: [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]}
        )
    client.put_item(TableName=table, Item={"name": {"S": "#pools"}, "pools": {"SS": [POOL]}})
    client.put_item(
        TableName=table,
        Item={"name": {"S": f"#pool#{POOL}"}, "live": {"SS": [running_job.name for running_job in running]}},
    )
    return running


def measure_store(store_class: type[DynamoJobStore], client: Any, table: str, depth: int) -> dict[str, Any]:
    running = fill(client, table, depth)
    meter = Meter(client)
    clock = [EPOCH + timedelta(days=1)]
    store = store_class(table, client)
    scheduler = Scheduler(
        SchedulerPorts(
            store=store,
            training=NoSageMaker(),
            config=StaticConfig(),
            lease=DynamoPassLease(table, client),
            clock=lambda: clock[0],
            pass_summaries=DynamoPassSummaries(table, client),
        )
    )
    scheduler.schedule()  # the first pass writes the head's reason
    steady, steady_s = meter.measure(scheduler.schedule)
    done = running[0]
    status = TrainingJobStatus(name=done.current_attempt.training_job_name, status="Completed")

    def after_completion() -> None:
        scheduler.report(done.name, 1, status)
        scheduler.schedule()

    completion, completion_s = meter.measure(after_completion)
    return {
        "steady": {**steady.__dict__, "seconds": steady_s},
        "after_completion": {**completion.__dict__, "seconds": completion_s},
    }


def run(depth: int) -> dict[str, Any]:
    results = {}
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for label, store_class in (("smq", DynamoJobStore), ("scan baseline", ScanStore)):
            table = f"bench-{label.split()[0]}-{depth}"
            definition = table_definition(load_template(TEMPLATE), table_name=table)
            definition.pop("TimeToLiveSpecification", None)
            client.create_table(**definition)
            results[label] = measure_store(store_class, client, table, depth)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depths", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    args = parser.parse_args()
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    figures = {depth: run(depth) for depth in args.depths}
    rows = []
    for depth, result in figures.items():
        for moment in ("steady", "after_completion"):
            ours, base = result["smq"][moment], result["scan baseline"][moment]
            rows.append(
                [
                    depth,
                    moment.replace("_", " "),
                    ours["read"],
                    ours["written"],
                    ours["requests"],
                    f"{ours['seconds']:.3f}",
                    base["read"],
                    f"{base['seconds']:.3f}",
                    f"{base['read'] / max(ours['read'], 1):.1f}x",
                    f"{base['seconds'] / max(ours['seconds'], 1e-9):.1f}x",
                ]
            )
    headers = [
        "pending",
        "pass",
        "items read",
        "items written",
        "requests",
        "wall s",
        "baseline read",
        "baseline wall s",
        "read ratio",
        "wall ratio",
    ]
    print(f"One pool of {CAPACITY} instances, all held; moto in-process; baseline = Scan-based store, same run.")
    print(tabulate(rows, headers=headers, tablefmt="github"))
    smallest, largest = min(figures), max(figures)
    for moment in ("steady", "after_completion"):
        for measure in ("read", "written"):
            low = max(figures[smallest]["smq"][moment][measure], 1)
            high = figures[largest]["smq"][moment][measure]
            print(f"{moment} items {measure}: {high / low:.2f}x from {smallest} to {largest} pending (target <= 2x)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
