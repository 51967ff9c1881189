"""Two smq stacks in one account, as docs/deployment.md suggests (production and a staging copy):
they share one SageMaker, so each sees the other's attempts. Production runs in this process;
staging is a second `smq local up` (one stack per process) on production's local SageMaker, with a
policy production's job breaks. Staging must count production's attempt as used instances of its
pool, and never stop it: production's job completes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from smq import SmqApiClient
from smq.local.stack import REGION, LocalStack, LocalStackOptions, read_state

from tests.e2e.local import POOL, synthetic_request, wait_for

STAGING_POLICY = {"required_tags": ["cost-center"]}
"""Production's job has no `cost-center` tag: staging would stop it as a job outside its queue."""


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        capacity={POOL: 2},
        executor="synthetic",
        workdir=tmp_path_factory.mktemp("production"),
        reconcile_every_seconds=5,
        stack_name="production",
    )
    with LocalStack(options) as running:
        yield running


@pytest.fixture(scope="module")
def staging(production: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The staging stack's state (`read_state`): its API and client environment."""
    workdir = tmp_path_factory.mktemp("staging")
    policy = workdir / "policy.json"
    policy.write_text(json.dumps(STAGING_POLICY))
    command = [sys.executable, "-m", "smq.cli", "local", "up", "--port", "0", "--executor", "synthetic",
               "--workdir", str(workdir), "--capacity", f"{POOL}=2", "--policy", str(policy),
               "--stack-name", "staging", "--sagemaker-url", production.sagemaker_url,
               "--reconcile-every", "1"]  # fmt: skip
    up = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (workdir / "stack.json").exists():
            assert up.poll() is None, up.stdout.read() if up.stdout else ""
            assert time.monotonic() < deadline, "the staging stack did not come up"
            time.sleep(0.2)
        yield read_state(workdir)
        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=60) == 0
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()


def api_client(state: dict[str, Any]) -> SmqApiClient:
    """A client of a stack that signs with the keys that stack's `smq local up` printed."""
    env = state["env"]
    session = boto3.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=REGION,
    )
    return SmqApiClient(state["api_url"], boto_session=session, region=REGION)


def staging_in_use(client: SmqApiClient) -> int:
    return next(pool["in_use"] for pool in client.list_pools() if pool["pool"] == POOL)


def test_staging_counts_productions_attempt_as_used_and_never_stops_it(
    production: LocalStack, staging: dict[str, Any]
) -> None:
    prod = api_client({"api_url": production.api_url, "env": production.client_env})
    stage = api_client(staging)
    prod.add_job(synthetic_request("train", duration=20))
    running = wait_for(prod, "train", {"running"})
    sagemaker = production.boto3_client("sagemaker")
    arn = sagemaker.describe_training_job(TrainingJobName=running["training_job_name"])["TrainingJobArn"]
    assert {"Key": "smq:stack", "Value": "production"} in sagemaker.list_tags(ResourceArn=arn)["Tags"]

    deadline = time.monotonic() + 60
    while staging_in_use(stage) != 1:
        assert prod.get_job("train")["state"] == "running", prod.get_job("train")
        assert time.monotonic() < deadline, "staging never counted production's attempt"
        time.sleep(0.5)

    finished = wait_for(prod, "train", {"completed", "failed", "cancelled"}, timeout=120)
    assert (finished["state"], finished["reason"]) == ("completed", "completed")
