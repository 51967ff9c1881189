"""The API under test: the real handler and DynamoJobStore on moto DynamoDB, fakes for the rest."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from smq_lambda.adapters.dynamodb_costs import DynamoCostRecords
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.handlers.api import create_app, idempotency_store, lambda_handler
from smq_lambda.service.cost_reports import CostReports
from smq_lambda.service.queue_api import QueueService
from smq_lambda.service.submission import SubmissionPolicy

from tests.api.builders import ADMIN, CHECKPOINT_PREFIX, POOLS, ROLE, TABLE
from tests.api.fake_access_rules import StaticAccessRules
from tests.api.gateway import ApiGateway
from tests.support.aws import create_queue_table, use_test_credentials
from tests.support.fake_costs import StaticPriceSource
from tests.support.fakes import FakeClock, FakeConfigSource, InMemoryPassSummaries, RecordingTrigger


@pytest.fixture(scope="module")
def moto_dynamodb() -> Iterator[Any]:
    """One moto DynamoDB and queue table per module: creating boto3 clients and tables is what
    makes moto tests slow, so tests share them and `dynamodb` empties the table in between."""
    with pytest.MonkeyPatch.context() as monkeypatch, mock_aws():
        use_test_credentials(monkeypatch)
        client = boto3.client("dynamodb")
        create_queue_table(client, TABLE)
        yield client


@pytest.fixture
def dynamodb(moto_dynamodb: Any) -> Any:
    """The queue table, empty."""
    pages = moto_dynamodb.get_paginator("scan").paginate(
        TableName=TABLE, ProjectionExpression="#n", ExpressionAttributeNames={"#n": "name"}
    )
    for page in pages:
        for start in range(0, len(page["Items"]), 25):
            deletes = [{"DeleteRequest": {"Key": item}} for item in page["Items"][start : start + 25]]
            moto_dynamodb.batch_write_item(RequestItems={TABLE: deletes})
    return moto_dynamodb


@pytest.fixture
def store(dynamodb: Any) -> DynamoJobStore:
    # Small pages so every listing crosses DynamoDB page boundaries.
    return DynamoJobStore(TABLE, dynamodb, page_size=2)


@pytest.fixture
def config() -> FakeConfigSource:
    return FakeConfigSource(POOLS)


@pytest.fixture
def trigger() -> RecordingTrigger:
    return RecordingTrigger()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def policy() -> SubmissionPolicy:
    return SubmissionPolicy(allowed_role_arns=frozenset({ROLE}), checkpoint_s3_prefix=CHECKPOINT_PREFIX)


@pytest.fixture
def access_rules() -> StaticAccessRules:
    return StaticAccessRules()


@pytest.fixture
def pass_summaries() -> InMemoryPassSummaries:
    """Where scheduling passes would publish pool usage; empty until a test publishes."""
    return InMemoryPassSummaries()


@pytest.fixture
def prices() -> StaticPriceSource:
    """No prices until a test sets some: every job unpriced."""
    return StaticPriceSource()


@pytest.fixture
def cost_records(dynamodb: Any) -> DynamoCostRecords:
    return DynamoCostRecords(TABLE, dynamodb)


@pytest.fixture
def service(
    store: DynamoJobStore,
    config: FakeConfigSource,
    trigger: RecordingTrigger,
    clock: FakeClock,
    policy: SubmissionPolicy,
    access_rules: StaticAccessRules,
    pass_summaries: InMemoryPassSummaries,
    prices: StaticPriceSource,
) -> QueueService:
    def tick() -> datetime:
        # Every call happens a second after the previous one, so submission order is unambiguous.
        return clock.advance(seconds=1)

    return QueueService(
        store,
        config,
        trigger,
        policy=policy,
        admin_principals={ADMIN},
        access_rules=access_rules,
        pass_summaries=pass_summaries,
        prices=prices,
        clock=tick,
    )


@pytest.fixture
def costs(
    cost_records: DynamoCostRecords,
    store: DynamoJobStore,
    config: FakeConfigSource,
    prices: StaticPriceSource,
    access_rules: StaticAccessRules,
    clock: FakeClock,
) -> CostReports:
    return CostReports(
        cost_records, store, config, prices, admin_principals={ADMIN}, access_rules=access_rules, clock=clock
    )


@pytest.fixture
def api(service: QueueService, costs: CostReports, dynamodb: Any) -> ApiGateway:
    app = create_app(service, idempotency_store(TABLE, dynamodb), costs)
    return ApiGateway(lambda_handler(lambda: app))


@pytest.fixture
def dump_table(dynamodb: Any) -> Callable[[], list[dict[str, Any]]]:
    """Every item of the table, by name: compared before and after a refused request."""

    def dump() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in dynamodb.get_paginator("scan").paginate(TableName=TABLE, ConsistentRead=True):
            items.extend(page["Items"])
        return sorted(items, key=lambda item: item["name"]["S"])

    return dump
