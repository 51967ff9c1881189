"""Stacks of their own: misdelivered events, the template as the source of the local table."""

from __future__ import annotations

from pathlib import Path

import pytest
from smq import SmqApiClient
from smq.local.event_router import Chaos
from smq.local.stack import TEMPLATE, LocalStack, LocalStackOptions

from tests.e2e.local import POOL, synthetic_request, wait_for

FINISHED = {"completed", "failed", "cancelled"}


@pytest.mark.slow
def test_lost_duplicated_and_late_events_are_repaired(tmp_path: Path) -> None:
    chaos = Chaos(duplicate=0.5, drop=0.3, max_delay_seconds=0.5, seed=3)
    options = LocalStackOptions(
        capacity={POOL: 1}, executor="synthetic", workdir=tmp_path, reconcile_every_seconds=1, chaos=chaos
    )
    with LocalStack(options) as chaotic:
        client = SmqApiClient(chaotic.api_url, region="us-east-1")
        for index, priority in enumerate([0, 2, 1, 3]):
            client.add_job(synthetic_request(f"chaos{index}", priority=priority, duration=1))
        jobs = [wait_for(client, f"chaos{index}", FINISHED, timeout=60) for index in range(4)]

    assert {job["state"] for job in jobs} == {"completed"}


def test_the_local_table_is_made_from_the_template(tmp_path: Path) -> None:
    text = TEMPLATE.read_text()
    assert "IndexName: by-state" in text
    changed = tmp_path / "template.yaml"
    changed.write_text(text.replace("IndexName: by-state", "IndexName: by-state-v2"))
    options = LocalStackOptions(
        capacity={POOL: 1}, executor="synthetic", workdir=tmp_path, template=changed, reconcile_every_seconds=None
    )

    with LocalStack(options) as local:
        table = local.boto3_client("dynamodb").describe_table(TableName="smq-queue")["Table"]

    assert "by-state-v2" in {index["IndexName"] for index in table["GlobalSecondaryIndexes"]}


def test_one_stack_per_process(tmp_path: Path) -> None:
    options = LocalStackOptions(
        capacity={POOL: 1}, executor="synthetic", workdir=tmp_path, reconcile_every_seconds=None
    )
    with LocalStack(options), pytest.raises(RuntimeError, match="already running"):
        LocalStack(options).start()
