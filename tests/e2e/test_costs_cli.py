"""End to end on the local stack (issue 23): two synthetic jobs of known duration, two instances
each, under a configured price; when both have ended, `smq costs --json` totals what SageMaker
billed them × instances × price, within 1%, and each job's submission answer carried its estimate."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from smq import SmqApiClient
from smq.cli.main import main
from smq.local.stack import LocalStack, LocalStackOptions, client_environment

from tests.e2e.local import POOL, synthetic_request, wait_for

PRICE = 3.6
"""US dollars per instance-hour: $0.001 per instance-second."""
INSTANCES = 2
DURATION_S = 3
CONFIG = {"pools": {POOL: 2 * INSTANCES}, "prices": {POOL: PRICE}}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    workdir = tmp_path_factory.mktemp("costs-stack")
    with LocalStack(LocalStackOptions(config=CONFIG, executor="synthetic", workdir=workdir)) as running:
        yield running


def costs_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["costs", "--json", *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return dict(json.loads(captured.out))


def test_smq_costs_totals_billed_time_times_instances_times_price(
    stack: LocalStack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = SmqApiClient(stack.api_url)
    names = ["priced-1", "priced-2"]
    for name in names:
        request = synthetic_request(name, duration=DURATION_S)
        request["ResourceConfig"]["InstanceCount"] = INSTANCES
        answer = client.add_job(request)
        assert answer["estimated_cost"] == {
            "usd": pytest.approx(3600 * INSTANCES * PRICE / 3600),
            "usd_per_hour": pytest.approx(INSTANCES * PRICE),
            "seconds": 3600,
            "ceiling": True,
        }, "no expected duration: its MaxRuntimeInSeconds is the ceiling"
    billed = []
    sagemaker = stack.boto3_client("sagemaker")
    for name in names:
        job = wait_for(client, name, {"completed"}, timeout=120)
        described = sagemaker.describe_training_job(TrainingJobName=job["training_job_name"])
        billed.append(described["BillableTimeInSeconds"])
    # The local service bills from the training process's start, which takes longer on a loaded machine.
    assert all(DURATION_S <= seconds <= DURATION_S + 15 for seconds in billed), billed
    expected = sum(billed) * INSTANCES * PRICE / 3600

    with client_environment(stack):
        deadline = time.monotonic() + 60
        report = costs_json(capsys)
        while report["total"]["attempts"] < len(names):
            assert time.monotonic() < deadline, f"the attempts were not recorded: {report}"
            time.sleep(0.5)
            report = costs_json(capsys)
        by_owner = costs_json(capsys, "--by", "owner", "--since", "1d")

    assert report["total"]["spend_usd"] == pytest.approx(expected, rel=0.01)
    assert report["total"]["unpriced_attempts"] == 0
    assert [(group["group"], group["attempts"]) for group in report["groups"]] == [("e2e", 2)]
    assert by_owner["total"]["spend_usd"] == pytest.approx(expected, rel=0.01), "the caller owns both jobs"
    assert report["prices"]["source"].startswith("configuration")
