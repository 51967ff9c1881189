"""The deployed entry point: `handler` builds its adapters from the template's environment variables.

Runs the fixture events of tests/events/ unchanged against moto (DynamoDB, SSM, Lambda). No scheduler
function exists in moto, so every kick fails: the accepted calls must still succeed. Nothing here
mocks SageMaker: the API never calls it.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws
from smq.local.template import load_template
from smq_lambda.adapters.dynamodb_pass_summaries import DynamoPassSummaries
from smq_lambda.domain.access.access import parse_access_rules
from smq_lambda.handlers import api
from smq_lambda.pass_summary import PassSummary, PoolMeasure
from smq_lambda.service import queue_api

from tests.api.gateway import LAMBDA_CONTEXT, check_exchange, load_event
from tests.support.aws import TEMPLATE_PATH, create_queue_table, use_test_credentials

TABLE = "smq-wiring-test"
POOLS_PARAMETER = "/smq-wiring-test/pools"
ACCESS_RULES_PARAMETER = "/smq-wiring-test/access-rules"
ACCESS_RULES = {
    "rules": [{"name": "alice", "principals": ["arn:aws:iam::123456789012:user/alice"], "max_priority": 10}],
    "default": {"max_priority": 0},
}
OPERATOR_SESSION = "arn:aws:sts::123456789012:assumed-role/QueueOperator/ops@example.com"


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
        "SMQ_ACCESS_RULES_PARAMETER": ACCESS_RULES_PARAMETER,
        "SMQ_FINISHED_TTL_DAYS": "7",
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    cold_start()
    with mock_aws():
        create_queue_table(boto3.client("dynamodb"), TABLE)
        ssm = boto3.client("ssm")
        ssm.put_parameter(Name=POOLS_PARAMETER, Type="String", Value=json.dumps({"ml.g5.xlarge": 3}))
        ssm.put_parameter(Name=ACCESS_RULES_PARAMETER, Type="String", Value=json.dumps(ACCESS_RULES))
        queue = boto3.client("sqs").create_queue(QueueName="smq-scheduler")
        monkeypatch.setenv("SMQ_SCHEDULER_QUEUE_URL", queue["QueueUrl"])
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


def test_every_fixture_event_through_the_deployed_handler(deployed: None) -> None:
    added = call(load_event("add_job.json"))
    assert (added["status"], added["name"], added["position"]) == (202, "vit-tiny-example", 1)
    sqs = boto3.client("sqs")
    kicks = sqs.receive_message(QueueUrl=os.environ["SMQ_SCHEDULER_QUEUE_URL"], MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(kick["Body"])["source"] for kick in kicks] == ["smq.api"], "the kick is on the scheduler queue"

    assert call(load_event("get_job.json"))["priority"] == 5
    listed = call(load_event("list_jobs.json"))
    assert [job["name"] for job in listed["jobs"]] == ["vit-tiny-example"]
    assert call(load_event("list_pools.json")) == {
        "status": 200,
        "pools": [{"pool": "ml.g5.xlarge", "capacity": 3, "in_use": 0, "warm": 0, "pending": 1, "head": None}],
        "measured_at": None,
    }
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


def test_an_admin_role_acts_through_its_sessions(deployed: None) -> None:
    call(load_event("add_job.json"))
    event = load_event("change_priority.json")
    event["requestContext"]["identity"]["userArn"] = OPERATOR_SESSION

    assert call(event)["history"][-1]["by"] == OPERATOR_SESSION


def test_the_access_rules_come_from_their_ssm_parameter(deployed: None) -> None:
    call(load_event("add_job.json"))  # priority 5, within alice's 10
    event = load_event("change_priority.json")
    event["body"] = json.dumps({"priority": 11})

    refused = call(event)

    assert (refused["status"], refused["field"]) == (403, "priority")
    assert "'alice'" in refused["message"]


def test_pools_come_from_the_usage_the_scheduler_published(deployed: None) -> None:
    measured = PassSummary(
        pools=(PoolMeasure("ml.g5.xlarge", 2, 2, "big"),), measured_at=datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    )
    DynamoPassSummaries(TABLE, boto3.client("dynamodb")).publish(measured)

    assert call(load_event("list_pools.json")) == {
        "status": 200,
        "pools": [{"pool": "ml.g5.xlarge", "capacity": 3, "in_use": 2, "warm": 0, "pending": 0, "head": "big"}],
        "measured_at": "2024-05-01T12:00:00.000Z",
    }


def test_the_template_wires_the_api_to_its_access_rules_and_not_to_sagemaker() -> None:
    template = load_template(TEMPLATE_PATH)
    function = template["Resources"]["ApiFunction"]["Properties"]
    actions = [
        action
        for policy in function["Policies"]
        for statement in policy["Statement"]
        for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
    ]

    assert not [action for action in actions if action.startswith("sagemaker:")]
    assert function["Environment"]["Variables"]["SMQ_ACCESS_RULES_PARAMETER"] == {"Ref": "AccessRulesParameter"}
    assert template["Resources"]["AccessRulesParameter"]["Properties"]["Value"] == {"Ref": "AccessRules"}
    default = json.loads(template["Parameters"]["AccessRules"]["Default"])
    assert parse_access_rules(default, source="AccessRules").default.max_priority == 1000


@pytest.mark.parametrize("module", [api, queue_api], ids=lambda module: module.__name__)
def test_the_api_builds_no_sagemaker_client_nor_imports_its_adapter(module: Any) -> None:
    tree = ast.parse(Path(module.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    constants = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}

    assert "smq_lambda.adapters.sagemaker" not in imported
    assert "sagemaker" not in constants
