"""The moto helpers other test levels build on."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError

from tests.support.aws import REGION, create_queue_table, moto_server


def test_the_queue_table_has_the_templates_indexes_and_ttl(dynamodb_client: Any) -> None:
    name = create_queue_table(dynamodb_client, "smq-queue-shape")

    table = dynamodb_client.describe_table(TableName=name)["Table"]
    ttl = dynamodb_client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]

    assert [key["AttributeName"] for key in table["KeySchema"]] == ["name"]
    indexes = {index["IndexName"]: index for index in table["GlobalSecondaryIndexes"]}
    assert [key["AttributeName"] for key in indexes["pending-by-pool"]["KeySchema"]] == ["pending_pool", "order_key"]
    assert [key["AttributeName"] for key in indexes["by-state"]["KeySchema"]] == ["state", "order_key"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}


def test_moto_server_serves_on_localhost_until_the_block_ends() -> None:
    config = Config(retries={"total_max_attempts": 1}, connect_timeout=2)
    with moto_server() as url:
        client = boto3.client("dynamodb", region_name=REGION, endpoint_url=url, config=config)
        create_queue_table(client, "served")
        served = client.describe_table(TableName="served")["Table"]["TableStatus"]

    assert url.startswith("http://127.0.0.1:")
    assert served == "ACTIVE"
    with pytest.raises(EndpointConnectionError):
        client.list_tables()
