"""The deployed entry point: `handler` builds its adapters from the template's environment variables.

Runs the fixture events of tests/events/ unchanged against moto (DynamoDB, SSM, Lambda, SageMaker).
No scheduler function exists in moto, so every kick fails: the accepted calls must still succeed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws
from smq_lambda.handlers import api

from tests.api.gateway import LAMBDA_CONTEXT, check_exchange, load_event
from tests.support.aws import create_queue_table, use_test_credentials

TABLE = "smq-wiring-test"
POOLS_PARAMETER = "/smq-wiring-test/pools"


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    use_test_credentials(monkeypatch)
    environment = {
        "SMQ_TABLE_NAME": TABLE,
        "SMQ_POOLS_PARAMETER": POOLS_PARAMETER,
        "SMQ_UNPOOLED": "reject",
        "SMQ_CHECKPOINT_S3_PREFIX": "s3://smq-wiring-bucket/checkpoints",
        "SMQ_ALLOWED_ROLE_ARNS": "arn:aws:iam::123456789012:role/SageMakerTrainingRole",
        "SMQ_ADMIN_PRINCIPALS": "arn:aws:iam::123456789012:role/QueueOperator",
        "SMQ_SCHEDULER_FUNCTION": "smq-scheduler",
        "SMQ_FINISHED_TTL_DAYS": "7",
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    cold_start()
    with mock_aws():
        create_queue_table(boto3.client("dynamodb"), TABLE)
        boto3.client("ssm").put_parameter(Name=POOLS_PARAMETER, Type="String", Value=json.dumps({"ml.g5.xlarge": 3}))
        yield
    cold_start()


def cold_start() -> None:
    """Forget the clients built for another environment: the handler's and powertools' default SSM
    provider, whose client would keep pointing at this test's endpoints."""
    api.default_app.cache_clear()
    parameters.clear_caches()


def call(event: dict[str, Any]) -> dict[str, Any]:
    response = api.handler(event, LAMBDA_CONTEXT)
    check_exchange(event, response)
    return {"status": response["statusCode"], **json.loads(response["body"])}


def test_every_fixture_event_through_the_deployed_handler(deployed: None, caplog: pytest.LogCaptureFixture) -> None:
    added = call(load_event("add_job.json"))
    assert (added["status"], added["name"], added["position"]) == (202, "vit-tiny-example", 1)
    assert "could not ask for a scheduling pass" in [record.getMessage() for record in caplog.records]

    assert call(load_event("get_job.json"))["priority"] == 5
    listed = call(load_event("list_jobs.json"))
    assert [job["name"] for job in listed["jobs"]] == ["vit-tiny-example"]
    assert call(load_event("list_pools.json"))["pools"] == [
        {"pool": "ml.g5.xlarge", "capacity": 3, "in_use": 0, "pending": 1}
    ]
    assert call(load_event("change_priority.json"))["priority"] == 10
    assert call(load_event("cancel_job.json"))["state"] == "cancelled"

    item = boto3.client("dynamodb").get_item(TableName=TABLE, Key={"name": {"S": "vit-tiny-example"}})["Item"]
    assert json.loads(item["request"]["S"])["CheckpointConfig"]["S3Uri"].startswith("s3://smq-wiring-bucket/")
    assert "expires_at" in item


def test_the_admin_principals_come_from_the_environment(deployed: None) -> None:
    call(load_event("add_job.json"))
    event = load_event("change_priority.json")
    event["requestContext"]["identity"]["userArn"] = "arn:aws:iam::123456789012:role/QueueOperator"

    assert call(event)["status"] == 200
    event["requestContext"]["identity"]["userArn"] = "arn:aws:iam::123456789012:user/mallory"
    assert call(event)["status"] == 403
