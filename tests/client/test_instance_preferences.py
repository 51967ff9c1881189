"""Flexible jobs from the client side, over the real handler and scheduler (QueueWorld): `smq submit
--prefer`, an SDK v2 estimator's `smq:instance-preferences` tag, and what `smq describe` and `smq status`
show once the queue has placed the job at its second preference because the first is full."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from sagemaker.pytorch import PyTorch
from smq.api_client import SmqApiClient
from smq.cli import main as cli
from smq.jobs import preferences_text, with_preferences
from smq.session import QueueTrainingJobSession

from tests.client.fake_sagemaker import FakeSageMakerClient
from tests.client.queue_world import BUCKET, POOL, ROLE, QueueWorld, training_request

GPU = "ml.g5.xlarge"
TAG = "smq:instance-preferences"

pytestmark = pytest.mark.usefixtures("isolated_home")


@pytest.fixture
def full_first_pool() -> Iterator[QueueWorld]:
    """One POOL instance, held by a running job nobody preempts, and two GPU instances free."""
    with QueueWorld({POOL: 1, GPU: 2}) as world:
        SmqApiClient(world.url).add_job(training_request("blocker", priority=100))
        world.progress("blocker", "InProgress", secondary_status="Training")
        yield world


def cli_submit(world: QueueWorld, directory: Path, request: dict[str, Any], *options: str) -> int:
    path = directory / "request.json"
    path.write_text(json.dumps(request))
    return cli.main(["--api-url", world.url, "submit", str(path), "--json", *options])


def sent_request(world: QueueWorld, name: str) -> dict[str, Any]:
    """The request SageMaker received for the job's current attempt."""
    return world.sagemaker.jobs[world.attempt_name(name)].request


def test_smq_submit_prefer_starts_the_job_at_its_second_preference_when_the_first_is_full(
    full_first_pool: QueueWorld, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    world = full_first_pool

    code = cli_submit(world, tmp_path, training_request("flexible"), "--prefer", POOL, "--prefer", f"{GPU}:2")

    assert code == 0
    job = world.job("flexible")
    assert [(placement.instance_type, placement.count) for placement in job.placements] == [(POOL, 1), (GPU, 2)]
    assert job.state == "starting" and job.where.selected is not None and job.where.selected.instance_type == GPU
    resources = sent_request(world, "flexible")["ResourceConfig"]
    assert (resources["InstanceType"], resources["InstanceCount"]) == (GPU, 2)
    assert "InstancePreferences" not in resources
    assert all(tag["Key"] != TAG for tag in sent_request(world, "flexible")["Tags"])
    capsys.readouterr()

    assert cli.main(["--api-url", world.url, "describe", "flexible"]) == 0
    described = capsys.readouterr().out
    shown = {label: value.strip() for label, _, value in (line.partition(":") for line in described.splitlines())}
    assert shown["Instance preferences"] == f"1. 1 × {POOL}  2. 2 × {GPU}; selected: {GPU} × 2"
    assert shown["Pool"] == GPU
    assert cli.main(["--api-url", world.url, "status"]) == 0
    status_rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("flexible")]
    assert status_rows[0][4] == GPU  # name, state, priority, team, pool


def test_smq_submit_prefer_refuses_a_malformed_preference_before_any_call(
    world: QueueWorld, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = cli_submit(world, tmp_path, training_request("flexible"), "--prefer", "g5:2")

    assert code == 2
    assert "TYPE:COUNT" in capsys.readouterr().err
    assert world.store.get("flexible") is None


def test_an_sdk_v2_estimator_gives_preferences_with_a_tag(
    full_first_pool: QueueWorld, tmp_path: Path, moto_url: str
) -> None:
    (tmp_path / "train.py").write_text("print('training')\n")
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    session = QueueTrainingJobSession(
        api_url=full_first_pool.url,
        default_bucket=BUCKET,
        sagemaker_client=FakeSageMakerClient(full_first_pool.sagemaker),
        poll_interval=0,
        telemetry_opt_out=False,
    )
    estimator = PyTorch(
        entry_point="train.py",
        source_dir=str(tmp_path),
        role=ROLE,
        framework_version="2.3",
        py_version="py311",
        instance_type=POOL,
        instance_count=1,
        sagemaker_session=session,
        tags=[{"Key": TAG, "Value": f"{POOL},{GPU}:2"}],
    )

    estimator.fit(wait=False, job_name="sdk-flexible")

    job = full_first_pool.job("sdk-flexible")
    assert [(placement.instance_type, placement.count) for placement in job.placements] == [(POOL, 1), (GPU, 2)]
    assert sent_request(full_first_pool, "sdk-flexible")["ResourceConfig"]["InstanceType"] == GPU


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        ({"instance_preferences": []}, None),
        (
            {"instance_preferences": [{"instance_type": POOL, "count": 1}, {"instance_type": GPU, "count": 2}]},
            f"1. 1 × {POOL}  2. 2 × {GPU}; selected: none yet",
        ),
        (
            {
                "instance_preferences": [{"instance_type": POOL, "count": 1}],
                "selected_instance_type": POOL,
                "selected_instance_count": 1,
            },
            f"1. 1 × {POOL}; selected: {POOL} × 1",
        ),
    ],
    ids=["pinned", "flexible, not started", "flexible, selected"],
)
def test_preferences_text(job: dict[str, Any], expected: str | None) -> None:
    assert preferences_text(job) == expected


def test_with_preferences_replaces_the_tag_and_leaves_the_request_alone() -> None:
    request = training_request("flexible")
    request["Tags"].append({"Key": TAG, "Value": "ml.p5.48xlarge"})

    tagged = with_preferences(request, [POOL, f"{GPU}:2"])

    assert tagged["Tags"] == [{"Key": "team", "Value": "vision"}, {"Key": TAG, "Value": f"{POOL},{GPU}:2"}]
    assert request["Tags"][-1]["Value"] == "ml.p5.48xlarge"
    assert with_preferences(request, []) == request
