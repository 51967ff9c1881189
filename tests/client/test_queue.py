"""TrainingQueue and QueuedJob against the real API handler and scheduler (queue_world)."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from smq import TrainingQueue
from smq.errors import AccessDenied, JobConflict, JobNotFound

from tests.client.queue_world import BUCKET, POOL, ROLE, QueueWorld, training_request


@pytest.fixture
def queue(world: QueueWorld) -> TrainingQueue:
    return TrainingQueue(api_url=world.url)


def test_submit_a_request_with_a_priority(queue: TrainingQueue, world: QueueWorld) -> None:
    job = queue.submit(training_request("first", priority=1), priority=8)

    assert (job.name, job.priority, job.pool, job.state) == ("first", 8, POOL, "pending")
    assert job.describe()["state"] == "starting"
    assert [a["training_job_name"] for a in job.attempts] == [world.attempt_name("first")]
    assert world.job("first").request["Tags"][-1] == {"Key": "priority", "Value": "8"}


def test_submit_keeps_the_requests_own_priority_and_can_rename_it(queue: TrainingQueue) -> None:
    job = queue.submit(training_request("template", priority=4), job_name="renamed")

    assert (job.name, job.priority) == ("renamed", 4)


def test_list_jobs_in_scheduling_order_with_filters() -> None:
    with QueueWorld({POOL: 1, "ml.g5.xlarge": 1}) as world:
        queue = TrainingQueue(api_url=world.url)
        queue.submit(training_request("running"), priority=9)
        queue.submit(training_request("low"), priority=1)
        queue.submit(training_request("high"), priority=5)
        queue.submit(training_request("other-pool", pool="ml.g5.xlarge"), priority=3)
        queue.get_job("low").cancel()
        queue.submit(training_request("lowest"), priority=0)

        active = [job.name for job in queue.list_jobs()]
        pending = [(job.name, job.position) for job in queue.list_jobs(state="pending", pool=POOL)]
        everything = [job.name for job in queue.list_jobs(state="all")]
        finished = [job.name for job in queue.list_jobs(state=["completed", "cancelled"])]

    assert active == ["running", "high", "other-pool", "lowest"]
    assert pending == [("high", 1), ("lowest", 2)]
    assert everything == ["running", "high", "other-pool", "low", "lowest"]
    assert finished == ["low"]


def test_unknown_pools_are_refused_with_the_apis_message(world: QueueWorld, queue: TrainingQueue) -> None:
    with pytest.raises(Exception) as raised:
        queue.submit(training_request("nowhere", pool="ml.g5.xlarge"))

    assert "ml.g5.xlarge" in str(raised.value)


def test_get_job_update_priority_and_cancel(queue: TrainingQueue, world: QueueWorld) -> None:
    queue.submit(training_request("busy"), priority=9)
    queue.submit(training_request("waiting"), priority=1)

    job = queue.get_job("waiting")
    job.update_priority(3)
    job.cancel()

    assert job.state == "cancelled"
    assert job.priority == 3
    assert job.done
    assert queue.get_job("waiting").state == "cancelled"
    with pytest.raises(JobConflict):
        job.cancel()


def test_an_unknown_job_is_job_not_found(queue: TrainingQueue) -> None:
    with pytest.raises(JobNotFound):
        queue.get_job("never-submitted")


def test_only_the_owner_may_change_a_job(queue: TrainingQueue, world: QueueWorld) -> None:
    queue.submit(training_request("mine"))
    bob = boto3.Session(aws_access_key_id="AKIDBOB", aws_secret_access_key="bob", region_name="us-east-1")

    with pytest.raises(AccessDenied) as raised:
        TrainingQueue(api_url=world.url, session=bob).get_job("mine").cancel()

    assert "AKIDBOB" in raised.value.message


def test_wait_returns_when_the_job_finishes(queue: TrainingQueue, world: QueueWorld) -> None:
    job = queue.submit(training_request("short"))
    world.progress("short", "InProgress", secondary_status="Training")
    world.progress("short", "Completed", secondary_status="Completed")

    description = job.wait(poll=0)

    assert description["state"] == "completed"
    assert job.attempts[0]["outcome"] == "completed"


def test_wait_gives_up_at_the_timeout_without_raising(queue: TrainingQueue) -> None:
    job = queue.submit(training_request("long"))

    description = job.wait(timeout=0.2, poll=0.05)

    assert description["state"] == "starting"
    assert not job.done


def test_submit_an_estimator_sends_the_request_fit_would_send(
    queue: TrainingQueue, world: QueueWorld, moto_url: str, tmp_path: Path, isolated_home: None
) -> None:
    from sagemaker.pytorch import PyTorch
    from sagemaker.session import Session

    boto3.client("s3").create_bucket(Bucket=BUCKET)
    (tmp_path / "train.py").write_text("print('training')\n")
    estimator = PyTorch(
        entry_point="train.py",
        source_dir=str(tmp_path),
        role=ROLE,
        framework_version="2.3",
        py_version="py311",
        instance_type=POOL,
        instance_count=1,
        hyperparameters={"epochs": 2},
        sagemaker_session=Session(default_bucket=BUCKET),
    )

    job = queue.submit(estimator, priority=6, inputs=f"s3://{BUCKET}/data", job_name="from-estimator")

    request = world.job("from-estimator").request
    assert job.priority == 6
    assert request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] == f"s3://{BUCKET}/data"
    assert request["HyperParameters"]["sagemaker_program"] == '"train.py"'
    assert estimator.latest_training_job is None


def test_submit_refuses_what_is_neither_a_request_nor_an_estimator(queue: TrainingQueue) -> None:
    with pytest.raises(TypeError):
        queue.submit("train.py")
    with pytest.raises(TypeError):
        queue.submit(training_request("x"), inputs="s3://bucket/data")


def test_pools_show_capacity_use_and_queue_depth(queue: TrainingQueue) -> None:
    queue.submit(training_request("one"))
    queue.submit(training_request("two"))

    assert queue.pools() == [{"pool": POOL, "capacity": 1, "in_use": 1, "warm": 0, "pending": 1, "head": "two"}]
