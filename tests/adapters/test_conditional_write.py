"""The one conditional write the single-item adapters share (`dynamodb_errors.written`): a write
whose condition did not hold is a lost race (False), "not now" is ServiceUnavailable, and any other
error is a defect raised as it is. Against moto: a real condition on a real table."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from smq_lambda.adapters.dynamodb_errors import written
from smq_lambda.adapters.dynamodb_table import transaction_busy
from smq_lambda.errors import ServiceUnavailable


def put(name: str) -> dict[str, Any]:
    return {
        "Item": {"name": {"S": name}},
        "ConditionExpression": "attribute_not_exists(#name)",
        "ExpressionAttributeNames": {"#name": "name"},
    }


def test_the_first_write_lands_and_the_second_loses_the_race(dynamodb_client: Any, table: str) -> None:
    assert written(dynamodb_client.put_item, TableName=table, **put("once")) is True
    assert written(dynamodb_client.put_item, TableName=table, **put("once")) is False


def refusing(code: str) -> Any:
    def call(**request: Any) -> None:
        raise ClientError({"Error": {"Code": code, "Message": "no"}}, "PutItem")

    return call


@pytest.mark.parametrize("code", ["ThrottlingException", "ProvisionedThroughputExceededException"])
def test_not_now_is_service_unavailable(code: str) -> None:
    with pytest.raises(ServiceUnavailable):
        written(refusing(code), TableName="t")


def test_a_code_the_caller_knows_means_not_now_is_service_unavailable_too() -> None:
    with pytest.raises(ServiceUnavailable):
        written(refusing("TransactionConflictException"), also=transaction_busy, TableName="t")


def test_any_other_error_is_raised_as_it_is() -> None:
    with pytest.raises(ClientError, match="AccessDeniedException"):
        written(refusing("AccessDeniedException"), TableName="t")
