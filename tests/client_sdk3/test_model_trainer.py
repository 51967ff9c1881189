"""A SageMaker Python SDK v3 `ModelTrainer` through the queue: `TrainingQueue.submit` and `.train`.

The queue is the real API handler and scheduler over fakes (queue_world); S3, STS and CloudWatch
Logs are moto; SageMaker's DescribeTrainingJob is answered from the fake training service through
the trainer's session. Nothing may leave the machine (`offline`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.validate import ParamValidator

pytest.importorskip("sagemaker.train", reason="needs the SageMaker Python SDK v3 (make test-sdk3)")

from sagemaker.core.helper.session_helper import Session
from sagemaker.core.resources import TrainingJob
from sagemaker.core.training.configs import Compute, InputData, SourceCode
from sagemaker.core.utils.exceptions import FailedStatusError
from sagemaker.train import ModelTrainer
from sagemaker.train.model_trainer import Mode
from smq import TrainingQueue
from smq.api_client import SmqApiClient
from smq.errors import InvalidRequest

from tests.client.fake_sagemaker import TRAINING_SECONDS, FakeSageMakerClient, TrainingLogs
from tests.client.queue_world import BUCKET, POOL, ROLE, QueueWorld, training_request

pytestmark = pytest.mark.usefixtures("isolated_home")


class Script:
    """Moves the world on one step each time the follower sleeps between looks at the queue."""

    def __init__(self, *steps: Callable[[], None]) -> None:
        self._steps = list(steps)
        self.sleeps = 0

    def __call__(self, _seconds: float) -> None:
        self.sleeps += 1
        if self._steps:
            self._steps.pop(0)()
        assert self.sleeps < 100, "the follower never stopped waiting"


@pytest.fixture
def bucket(moto_url: str) -> str:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    return BUCKET


@pytest.fixture
def iam_on_moto(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Staging source code, SDK v3 asks IAM's policy simulator whether the role can write to the
    default bucket (and carries on whatever the answer): moto stands in for IAM here."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_IAM", moto_url)


@pytest.fixture
def source_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "trainer"
    directory.mkdir()
    (directory / "train.py").write_text("print('training')\n")
    return directory


def make_session(world: QueueWorld) -> Session:
    """The trainer's session: the test bucket, SageMaker answered by the world's fake service."""
    return Session(
        boto_session=boto3.Session(), default_bucket=BUCKET, sagemaker_client=FakeSageMakerClient(world.sagemaker)
    )


def make_trainer(world: QueueWorld, **kwargs: Any) -> ModelTrainer:
    arguments: dict[str, Any] = {
        "training_image": "local/trainer:latest",
        "role": ROLE,
        "compute": Compute(instance_type=POOL, instance_count=1),
        "hyperparameters": {"epochs": 3, "model": "vit_tiny"},
        "base_job_name": "vit",
        "sagemaker_session": make_session(world),
    }
    arguments.update(kwargs)
    return ModelTrainer(**arguments)


def make_queue(world: QueueWorld, sleep: Callable[[float], None] = lambda _s: None) -> TrainingQueue:
    return TrainingQueue(api_url=world.url, sleep=sleep)


def api(world: QueueWorld) -> SmqApiClient:
    """Another user of the same queue."""
    return SmqApiClient(world.url)


def occupy_pool(world: QueueWorld, name: str = "blocker", priority: int = 100) -> None:
    """Fill the pool's one instance with a running job nobody preempts."""
    api(world).add_job(training_request(name, priority=priority))
    world.progress(name, "InProgress", secondary_status="Training")


# ---------------------------------------------------------------------- submitting


def test_submit_queues_the_request_train_would_send_and_nothing_leaves_the_machine(
    world: QueueWorld, bucket: str, iam_on_moto: None, source_dir: Path, offline: list[str]
) -> None:
    trainer = make_trainer(
        world,
        source_code=SourceCode(source_dir=str(source_dir), entry_script="train.py"),
        tags=[{"key": "priority", "value": "7"}],
    )

    job = make_queue(world).submit(trainer, job_name="vit-queued")

    request = dict(world.job("vit-queued").request)
    model = botocore.session.get_session().get_service_model("sagemaker")
    report = ParamValidator().validate(request, model.operation_model("CreateTrainingJob").input_shape)
    assert not report.has_errors(), report.generate_report()
    assert (job.name, job.priority) == ("vit-queued", 7)
    assert request["HyperParameters"] == {"epochs": "3", "model": "vit_tiny"}
    assert request["AlgorithmSpecification"]["TrainingImage"] == "local/trainer:latest"
    channels = {channel["ChannelName"]: channel for channel in request["InputDataConfig"]}
    assert set(channels) == {"code", "sm_drivers"}
    code = channels["code"]["DataSource"]["S3DataSource"]["S3Uri"]
    assert boto3.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=code.removeprefix(f"s3://{BUCKET}/"))["KeyCount"]
    assert trainer._latest_training_job is None
    assert offline == []


def test_the_queued_request_is_the_one_train_sends_to_sagemaker(world: QueueWorld, bucket: str) -> None:
    sent: list[dict[str, Any]] = []

    class Sent(Exception):
        """Stops `train()` once its CreateTrainingJob request is built."""

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append(dict(params))
        raise Sent

    recording = boto3.Session()
    recording.events.register("provide-client-params.sagemaker.CreateTrainingJob", record)
    direct = make_trainer(world, sagemaker_session=Session(boto_session=recording, default_bucket=BUCKET))
    with pytest.raises(Sent):
        direct.train(input_data_config=[InputData(channel_name="train", data_source=f"s3://{BUCKET}/data")])

    make_queue(world).submit(
        make_trainer(world),
        inputs=[InputData(channel_name="train", data_source=f"s3://{BUCKET}/data")],
        job_name="same-job",
    )

    assert _without_name(world.job("same-job").request) == _without_name(sent[0])


def _without_name(request: dict[str, Any]) -> dict[str, Any]:
    """The request less the unique name the SDK gives every build (`vit-<timestamp>`)."""
    return {key: value for key, value in request.items() if key != "TrainingJobName"}


def test_the_trainers_priority_tag_is_kept_unless_a_priority_is_given(world: QueueWorld, bucket: str) -> None:
    queue = make_queue(world)
    tagged = [{"key": "priority", "value": "4"}]

    queue.submit(make_trainer(world, tags=tagged), job_name="own-priority")
    queue.submit(make_trainer(world, tags=tagged), job_name="given-priority", priority=9)

    assert world.job("own-priority").priority == 4
    assert world.job("given-priority").priority == 9


def test_a_model_trainer_gives_instance_preferences_with_a_tag(bucket: str) -> None:
    """SDK v3 has no member for preferences: the `smq:instance-preferences` tag gives them (entries
    separated by spaces, which SageMaker's tag pattern allows), and the queue starts the job at its
    second preference while the first pool is full."""
    gpu = "ml.g5.xlarge"
    with QueueWorld({POOL: 1, gpu: 2}) as world:
        occupy_pool(world)
        tags = [{"key": "smq:instance-preferences", "value": f"{POOL} {gpu}:2"}]

        make_queue(world).submit(make_trainer(world, tags=tags), job_name="vit-flexible")

        job = world.job("vit-flexible")
        assert [(placement.instance_type, placement.count) for placement in job.placements] == [(POOL, 1), (gpu, 2)]
        sent = world.sagemaker.jobs[world.attempt_name("vit-flexible")].request["ResourceConfig"]
        assert (sent["InstanceType"], sent["InstanceCount"], "InstancePreferences" in sent) == (gpu, 2, False)


def test_api_refusals_raise_before_anything_waits(world: QueueWorld, bucket: str) -> None:
    trainer = make_trainer(world, compute=Compute(instance_type="ml.p5.48xlarge", instance_count=1))

    with pytest.raises(InvalidRequest) as raised:
        make_queue(world).train(trainer, job_name="refused")

    assert raised.value.field is not None and raised.value.field.startswith("ResourceConfig.InstanceType")
    assert world.store.get("refused") is None


def test_a_local_container_trainer_and_v2_only_arguments_are_refused(world: QueueWorld, bucket: str) -> None:
    local = make_trainer(world, training_mode=Mode.LOCAL_CONTAINER)

    with pytest.raises(ValueError, match="SAGEMAKER_TRAINING_JOB"):
        make_queue(world).submit(local)
    with pytest.raises(TypeError, match="experiment_config"):
        make_queue(world).submit(make_trainer(world), experiment_config={"ExperimentName": "x"})
    with pytest.raises(TypeError, match="ModelTrainer"):
        make_queue(world).submit(object())


# ---------------------------------------------------------------------- train() through the queue


def test_train_follows_the_job_through_preemption_and_streams_each_attempts_logs(
    world: QueueWorld, bucket: str, capsys: pytest.CaptureFixture[str], offline: list[str]
) -> None:
    logs = TrainingLogs(boto3.client("logs"))
    attempts: list[str] = []

    def first_attempt_runs() -> None:
        attempts.append(world.attempt_name("vit"))
        world.progress("vit", "InProgress", secondary_status="Training")
        logs.write(attempts[0], "step 1 loss 2.30", "checkpoint saved at step 5")

    def urgent_job_arrives() -> None:
        api(world).add_job(training_request("urgent", priority=10))

    def urgent_job_finishes() -> None:
        world.progress("urgent", "InProgress", secondary_status="Training")
        world.progress("urgent", "Completed", secondary_status="Completed")

    def second_attempt_runs() -> None:
        attempts.append(world.attempt_name("vit"))
        world.progress("vit", "InProgress", secondary_status="Training")
        logs.write(attempts[1], "resumed from checkpoint step 5", "step 10 loss 1.10")

    script = Script(
        first_attempt_runs,
        urgent_job_arrives,
        world.finish_stops,
        urgent_job_finishes,
        second_attempt_runs,
        lambda: world.progress("vit", "Completed", secondary_status="Completed"),
    )
    trainer = make_trainer(world)

    job = make_queue(world, sleep=script).train(trainer, job_name="vit", priority=1)

    output = capsys.readouterr().out
    expected_in_order = [
        "starting attempt 1 of vit",
        "step 1 loss 2.30",
        "attempt 1 of vit is being preempted: preempted for urgent",
        "back in the queue at position 1",
        "starting attempt 2 of vit",
        "resumed from checkpoint step 5",
        "step 10 loss 1.10",
        "vit completed",
        f"Training seconds: {2 * TRAINING_SECONDS}",
        "Attempts: 2",
    ]
    positions = [output.find(text) for text in expected_in_order]
    assert -1 not in positions, output
    assert positions == sorted(positions), output
    assert output.count("resumed from checkpoint step 5") == 1
    assert (job.state, [a["outcome"] for a in job.attempts]) == ("completed", ["preempted", "completed"])
    latest = trainer._latest_training_job
    assert isinstance(latest, TrainingJob)
    assert (latest.training_job_name, latest.training_job_status) == (attempts[1], "Completed")
    assert latest.model_artifacts.s3_model_artifacts == f"s3://{BUCKET}/vit/{attempts[1]}/output/model.tar.gz"
    assert offline == []


def test_train_raises_the_sdk_error_when_the_job_fails(world: QueueWorld, bucket: str) -> None:
    script = Script(lambda: world.progress("doomed", "Failed", failure_reason="AlgorithmError: loss is NaN"))
    trainer = make_trainer(world)

    with pytest.raises(FailedStatusError) as raised:
        make_queue(world, sleep=script).train(trainer, job_name="doomed", logs=False)

    assert "loss is NaN" in str(raised.value)
    assert trainer._latest_training_job is not None
    assert trainer._latest_training_job.training_job_status == "Failed"


def test_a_cancelled_job_ends_the_wait_as_a_stopped_training_job_does(
    world: QueueWorld, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    occupy_pool(world)
    trainer = make_trainer(world)

    job = make_queue(world, sleep=Script(lambda: api(world).cancel_job("unwanted"))).train(trainer, job_name="unwanted")

    assert job.state == "cancelled"
    assert "unwanted cancelled" in capsys.readouterr().out
    assert trainer._latest_training_job is None


def test_waiting_reports_position_changes_while_queued(
    world: QueueWorld, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    occupy_pool(world)
    api(world).add_job(training_request("ahead", priority=5))
    script = Script(
        lambda: api(world).cancel_job("ahead"),
        lambda: world.progress("blocker", "Completed", secondary_status="Completed"),
        lambda: world.progress("patient", "Completed", secondary_status="Completed"),
    )

    make_queue(world, sleep=script).train(make_trainer(world), job_name="patient", logs=False)

    output = capsys.readouterr().out
    assert "patient is pending at position 2 in ml.m5.xlarge" in output
    assert "patient is at position 1 in ml.m5.xlarge" in output
    assert "starting attempt 1 of patient" in output


def test_train_without_waiting_only_queues(world: QueueWorld, bucket: str) -> None:
    occupy_pool(world)
    never = Script()

    job = make_queue(world, sleep=never).train(make_trainer(world), wait=False, job_name="later")

    assert (job.state, job.position) == ("pending", 1)
    assert never.sleeps == 0
