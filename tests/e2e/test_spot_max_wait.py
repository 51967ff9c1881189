"""End to end on the local stack (synthetic executor): with a `spot` section a spot job starts in
the spot pool `<type>:spot`; when SageMaker stops it at its MaxWaitTimeInSeconds (here: it hangs
until the wait runs out), the queue starts it again on demand, in the type's own pool, and it
completes there."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from smq import SmqApiClient
from smq.local.sagemaker import PhaseTimings
from smq.local.sagemaker.errors import ResourceNotFound
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, synthetic_request, wait_for

SPOT_POOL = f"{POOL}:spot"
WAIT_S = 5


STARTING_S = 3.0
"""SageMaker counts MaxWaitTimeInSeconds from the job's creation and MaxRuntimeInSeconds from its
training, so with both at WAIT_S the wait runs out first by the time the job spends starting:
0.1 s by default, which a loaded machine's threads can reorder; 3 s here."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        config={"pools": {POOL: 1}, "spot": {"pools": {POOL: 1}}},
        executor="synthetic",
        workdir=tmp_path_factory.mktemp("stack"),
        reconcile_every_seconds=5,
        phase_timings=PhaseTimings(starting=STARTING_S),
    )
    with LocalStack(options) as running:
        yield running


def hang_once_created(stack: LocalStack, training_job_name: str) -> None:
    """Make the attempt hang as soon as SageMaker knows it (the hang holds from its first step of
    training), so a loaded machine cannot let its 2 s of training end first."""
    deadline = time.monotonic() + 30
    while True:
        try:
            stack.inject(training_job_name, "hang")
            return
        except ResourceNotFound:
            assert time.monotonic() < deadline, "the attempt never reached SageMaker"
            time.sleep(0.05)


def test_a_spot_job_stopped_at_its_max_wait_completes_on_demand(stack: LocalStack) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")
    request = synthetic_request("spot-wait", duration=2)
    request["EnableManagedSpotTraining"] = True
    request["StoppingCondition"] = {"MaxRuntimeInSeconds": WAIT_S, "MaxWaitTimeInSeconds": WAIT_S}
    client.add_job(request)
    spot = wait_for(client, "spot-wait", {"starting", "running"})
    hang_once_created(stack, spot["training_job_name"])
    assert spot["selected_instance_type"] == POOL
    assert {pool["pool"]: pool["in_use"] for pool in client.list_pools()} == {POOL: 0, SPOT_POOL: 1}
    sagemaker = stack.boto3_client("sagemaker")

    job = wait_for(client, "spot-wait", {"completed", "failed", "cancelled"}, timeout=60)

    assert job["state"] == "completed", job
    first, second = job["attempts"]
    assert first["outcome"] == "spot-fallback"
    assert "at its MaxWaitTimeInSeconds (5 s)" in first["reason"]
    stopped = sagemaker.describe_training_job(TrainingJobName=first["training_job_name"])
    on_demand = sagemaker.describe_training_job(TrainingJobName=second["training_job_name"])
    assert (stopped["TrainingJobStatus"], stopped["SecondaryStatus"]) == ("Stopped", "MaxWaitTimeExceeded")
    assert on_demand["EnableManagedSpotTraining"] is False
    assert "MaxWaitTimeInSeconds" not in on_demand["StoppingCondition"]
