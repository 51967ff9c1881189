"""moto helpers: fake credentials, a moto server on 127.0.0.1, and the queue table from template.yaml.

The table is always built from the template (smq.local.template), so tests run against the indexes
and key schema that CloudFormation deploys, never a copy of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer
from smq.local.template import load_template, table_definition

REGION = "us-east-1"
REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = REPO_ROOT / "template.yaml"
TEST_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
"""Credentials and region for moto: never a real account's."""


def use_test_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point boto3 at fake credentials and away from any real profile or endpoint (undone by
    `monkeypatch`; session-wide fixtures can use `pytest.MonkeyPatch.context()`)."""
    for name in list(os.environ):
        if name.startswith("AWS_ENDPOINT_URL") or name in ("AWS_PROFILE", "AWS_CONFIG_FILE"):
            monkeypatch.delenv(name)
    for name, value in TEST_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto server on a free port of 127.0.0.1 for the duration of the block; yields its URL.

    The server keeps its state in the same process-wide moto backends as `mock_aws`, so it sees
    (and resets with) what in-process mocks created: give tables and jobs names of their own.
    """
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    wsgi = server._server
    assert wsgi is not None, "moto server did not start"
    try:
        yield f"http://127.0.0.1:{wsgi.server_port}"
    finally:
        server.stop()


@lru_cache(maxsize=4)
def _template(path: Path) -> dict[str, Any]:
    return load_template(path)


def create_queue_table(client: Any, table_name: str = "smq-queue", template_path: Path = TEMPLATE_PATH) -> str:
    """Create the template's queue table (indexes, TTL) with a low-level `dynamodb` client."""
    definition = table_definition(_template(template_path), table_name=table_name)
    ttl = definition.pop("TimeToLiveSpecification", None)
    client.create_table(**definition)
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1})
    if ttl is not None:
        client.update_time_to_live(TableName=table_name, TimeToLiveSpecification=ttl)
    return table_name


@lru_cache(maxsize=1)
def pending_index_attributes() -> frozenset[str]:
    """The attributes the template's pending index holds: its keys, the table's key and the
    projected ones (the in-memory store serves its queue fronts with exactly these)."""
    definition = table_definition(_template(TEMPLATE_PATH), table_name="projection")
    (index,) = [index for index in definition["GlobalSecondaryIndexes"] if index["IndexName"] == "pending-by-pool"]
    keys = {key["AttributeName"] for key in (*definition["KeySchema"], *index["KeySchema"])}
    return frozenset(keys | set(index["Projection"].get("NonKeyAttributes", [])))
