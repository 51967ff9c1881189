"""End to end on the local stack: a flexible job submitted with `smq submit --prefer` starts at its
second preference while a running job holds the first preference's pool; `smq describe` shows the
selected type, and the request SageMaker received names only that type."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from smq import SmqApiClient
from smq.cli.main import main as smq
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, synthetic_request, wait_for

GPU = "ml.g5.xlarge"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        capacity={POOL: 1, GPU: 2},
        executor="synthetic",
        workdir=tmp_path_factory.mktemp("stack"),
        reconcile_every_seconds=5,
    )
    with LocalStack(options) as running:
        yield running


def test_a_flexible_job_starts_at_its_second_preference_when_the_first_is_full(
    stack: LocalStack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")
    client.add_job(synthetic_request("holder", priority=100, duration=60))
    wait_for(client, "holder", {"running"})
    path = tmp_path / "flexible.json"
    path.write_text(json.dumps(synthetic_request("flexible", duration=60)))

    assert (
        smq(["--api-url", stack.api_url, "submit", str(path), "--json", "--prefer", POOL, "--prefer", f"{GPU}:2"]) == 0
    )
    job = wait_for(client, "flexible", {"running"})
    capsys.readouterr()
    assert smq(["--api-url", stack.api_url, "describe", "flexible"]) == 0

    assert (job["selected_instance_type"], job["selected_instance_count"], job["pool"]) == (GPU, 2, GPU)
    assert f"selected: {GPU} × 2" in capsys.readouterr().out
    described = stack.boto3_client("sagemaker").describe_training_job(TrainingJobName=job["training_job_name"])
    assert (described["ResourceConfig"]["InstanceType"], described["ResourceConfig"]["InstanceCount"]) == (GPU, 2)
    assert "InstancePreferences" not in described["ResourceConfig"]
    client.cancel_job("flexible")
    client.cancel_job("holder")
