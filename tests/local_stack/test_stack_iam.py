"""The local stack enforces IAM: each function's calls are signed with its own role, made from the
template's `Policies`, and moto refuses what the role does not allow; the stack, its users and
tests act as an admin that may do anything."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from smq.local.stack import TEMPLATE, LocalStack, LocalStackOptions
from smq.local.stack_roles import moto_policy, running_as

POOLS_ITEM = {"name": {"S": "#pools"}}


def denied(call: Any) -> bool:
    try:
        call()
    except ClientError as error:
        assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 403, error.response
        return True
    return False


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[LocalStack]:
    options = LocalStackOptions(executor="synthetic", workdir=tmp_path, reconcile_every_seconds=None)
    with LocalStack(options) as local:
        yield local


@pytest.mark.slow
def test_a_function_may_do_what_its_role_allows_and_nothing_else(stack: LocalStack) -> None:
    dynamodb, cloudwatch, sqs = boto3.client("dynamodb"), boto3.client("cloudwatch"), boto3.client("sqs")
    queue = stack.queue_url("SchedulerQueue")
    with running_as("IdleStopFunction"):
        assert not denied(lambda: dynamodb.get_item(TableName="smq-queue", Key=POOLS_ITEM))
        assert denied(lambda: dynamodb.scan(TableName="smq-queue"))
        assert denied(lambda: sqs.send_message(QueueUrl=queue, MessageBody="{}"))
    with running_as("ApiFunction"):
        assert not denied(lambda: sqs.send_message(QueueUrl=queue, MessageBody="{}"))
        assert denied(lambda: cloudwatch.describe_alarms())
    with running_as("SchedulerFunction"):
        assert not denied(lambda: cloudwatch.describe_alarms(AlarmNamePrefix=stack.idle_alarm_prefix))


@pytest.mark.slow
def test_the_stack_and_its_users_act_as_the_admin(stack: LocalStack) -> None:
    """Outside any function: this process's clients and the keys a client process is given."""
    assert not denied(lambda: boto3.client("dynamodb").scan(TableName="smq-queue"))
    keys = (stack.client_env["AWS_ACCESS_KEY_ID"], stack.client_env["AWS_SECRET_ACCESS_KEY"])
    assert keys != ("testing", "testing")
    assert not denied(lambda: stack.boto3_client("cloudwatch").describe_alarms())


@pytest.mark.slow
def test_a_permission_missing_from_the_template_fails_the_function_locally(tmp_path: Path) -> None:
    """The class of the idle-stop defect: the role is the template's, so a template without the
    idle stop's GetItem makes the idle stop's read of the pool registry fail, as in AWS."""
    broken = TEMPLATE.read_text().replace(
        "                - dynamodb:GetItem\n                - dynamodb:BatchGetItem\n                - dynamodb:UpdateItem\n",
        "                - dynamodb:BatchGetItem\n                - dynamodb:UpdateItem\n",
    )
    assert broken != TEMPLATE.read_text(), "the idle stop's table statement changed; update this test"
    template = tmp_path / "template.yaml"
    template.write_text(broken)
    options = LocalStackOptions(
        executor="synthetic", workdir=tmp_path / "stack", template=template, reconcile_every_seconds=None
    )
    with LocalStack(options), running_as("IdleStopFunction"):
        assert denied(lambda: boto3.client("dynamodb").get_item(TableName="smq-queue", Key=POOLS_ITEM))


@pytest.mark.parametrize(
    ("actions", "granted"),
    [
        (["dynamodb:UpdateItem"], {"dynamodb:UpdateItem", "dynamodb:TransactWriteItems"}),
        (["dynamodb:GetItem"], {"dynamodb:GetItem", "dynamodb:TransactGetItems"}),
        (["cloudwatch:DeleteAlarms"], {"cloudwatch:DeleteAlarms", "monitoring:DeleteAlarms"}),
        (["sqs:DeleteMessage"], {"sqs:DeleteMessage", "sqs:DeleteMessageBatch"}),
        (["ssm:GetParameter"], {"ssm:GetParameter"}),
    ],
)
def test_moto_is_given_the_operation_names_it_checks(actions: list[str], granted: set[str]) -> None:
    document = {"Statement": [{"Effect": "Allow", "Action": actions, "Resource": "arn:aws:x", "Condition": {}}]}
    (statement,) = moto_policy(document)["Statement"]
    assert statement == {"Effect": "Allow", "Action": sorted(granted), "Resource": "*"}
