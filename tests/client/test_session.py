"""QueueTrainingJobSession with a real `sagemaker.pytorch.PyTorch` estimator.

The queue is the real API handler and scheduler over fakes (queue_world), S3, STS and CloudWatch
Logs are moto, SageMaker's DescribeTrainingJob is answered from the fake training service. Nothing
may leave the machine (`offline`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.validate import ParamValidator
from sagemaker import exceptions
from sagemaker.pytorch import PyTorch
from sagemaker.session import Session
from smq.api_client import SmqApiClient
from smq.errors import InvalidRequest, JobConflict
from smq.session import QueueTrainingJobSession

from tests.client.fake_sagemaker import TRAINING_SECONDS, FakeSageMakerClient, TrainingLogs
from tests.client.queue_world import BUCKET, POOL, ROLE, QueueWorld, training_request

pytestmark = pytest.mark.usefixtures("isolated_home")


@pytest.fixture
def source_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "trainer"
    directory.mkdir()
    (directory / "train.py").write_text("print('training')\n")
    return directory


@pytest.fixture
def bucket(moto_url: str) -> str:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    return BUCKET


class Script:
    """Moves the world on one step each time the session sleeps between looks at the queue."""

    def __init__(self, *steps: Callable[[], None]) -> None:
        self._steps = list(steps)
        self.sleeps = 0

    def __call__(self, _seconds: float) -> None:
        self.sleeps += 1
        if self._steps:
            self._steps.pop(0)()
        assert self.sleeps < 100, "the session never stopped waiting"


@pytest.fixture(autouse=True)
def sdk_telemetry_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the SDK's telemetry would have requested; recorded here instead of requested.

    Opting out costs the SDK a schema validation per config lookup (seconds per `fit()`), so most
    tests keep telemetry on and catch it here; the tests of the session's defaults opt out for real.
    """
    import sagemaker.telemetry.telemetry_logging as telemetry

    calls: list[str] = []
    monkeypatch.setattr(telemetry, "_requests_helper", lambda url, timeout: calls.append(url))
    monkeypatch.setattr(telemetry, "_get_accountId", lambda session: "123456789012")
    return calls


def make_session(
    world: QueueWorld, sleep: Callable[[float], None] = lambda _s: None, **kwargs: Any
) -> QueueTrainingJobSession:
    """A session on the world; telemetry stays on (and is caught) unless a test asks otherwise."""
    kwargs.setdefault("telemetry_opt_out", False)
    return QueueTrainingJobSession(
        api_url=world.url,
        default_bucket=BUCKET,
        sagemaker_client=FakeSageMakerClient(world.sagemaker),
        poll_interval=0,
        sleep=sleep,
        **kwargs,
    )


def api(world: QueueWorld) -> SmqApiClient:
    """Another user of the same queue."""
    return SmqApiClient(world.url)


def make_estimator(session: Session, source_dir: Path, **kwargs: Any) -> PyTorch:
    arguments: dict[str, Any] = {
        "entry_point": "train.py",
        "source_dir": str(source_dir),
        "role": ROLE,
        "framework_version": "2.3",
        "py_version": "py311",
        "instance_type": POOL,
        "instance_count": 1,
        "hyperparameters": {"epochs": 3, "model": "vit_tiny"},
        "sagemaker_session": session,
    }
    arguments.update(kwargs)
    return PyTorch(**arguments)


def occupy_pool(world: QueueWorld, name: str = "blocker", priority: int = 100) -> None:
    """Fill the pool's one instance with a running job nobody preempts."""
    api(world).add_job(training_request(name, priority=priority))
    world.progress(name, "InProgress", secondary_status="Training")


# ---------------------------------------------------------------------- submitting


def test_fit_without_waiting_queues_the_sdk_request_and_nothing_leaves_the_machine(
    world: QueueWorld,
    bucket: str,
    source_dir: Path,
    offline: list[str],
    caplog: pytest.LogCaptureFixture,
    sdk_telemetry_calls: list[str],
) -> None:
    session = make_session(world, telemetry_opt_out=True)
    estimator = make_estimator(session, source_dir, tags=[{"Key": "priority", "Value": "7"}])

    with caplog.at_level(logging.INFO, logger="smq.session"):
        estimator.fit(wait=False, job_name="vit-queued")

    queued = world.job("vit-queued")
    assert queued.priority == 7
    request = dict(queued.request)
    model = botocore.session.get_session().get_service_model("sagemaker")
    report = ParamValidator().validate(request, model.operation_model("CreateTrainingJob").input_shape)
    assert not report.has_errors(), report.generate_report()
    assert request["HyperParameters"]["sagemaker_program"] == '"train.py"'
    assert request["HyperParameters"]["sagemaker_submit_directory"].startswith(f'"s3://{bucket}/vit-queued/')
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith("pytorch-training:2.3-cpu-py311")
    assert estimator.latest_training_job.name == "vit-queued"
    message = next(r.getMessage() for r in caplog.records if r.name == "smq.session")
    assert "vit-queued" in message and POOL in message and "entry point train.py" in message
    assert "epochs=3" in message and "model='vit_tiny'" in message
    assert offline == []
    assert sdk_telemetry_calls == []


def test_the_queued_request_is_the_one_the_sdk_would_send_to_sagemaker(
    world: QueueWorld, bucket: str, source_dir: Path
) -> None:
    sent: list[dict[str, Any]] = []

    class RecordingSageMaker:
        def create_training_job(self, **request: Any) -> None:
            sent.append(request)

    plain = Session(default_bucket=BUCKET, sagemaker_client=RecordingSageMaker())
    make_estimator(plain, source_dir).fit(wait=False, job_name="same-job")
    world_session = make_session(world)
    make_estimator(world_session, source_dir).fit(wait=False, job_name="same-job")

    assert world.job("same-job").request == sent[0]


def test_priority_comes_from_the_estimator_tag_else_the_session_default(
    world: QueueWorld, bucket: str, source_dir: Path
) -> None:
    session = make_session(world, priority=3)

    make_estimator(session, source_dir).fit(wait=False, job_name="default-priority")
    make_estimator(session, source_dir, tags=[{"Key": "priority", "Value": "9"}]).fit(
        wait=False, job_name="own-priority"
    )

    assert world.job("default-priority").priority == 3
    assert world.job("own-priority").priority == 9


def test_a_session_priority_out_of_range_is_refused_before_any_call(world: QueueWorld) -> None:
    with pytest.raises(ValueError, match="between"):
        make_session(world, priority=10**7)


@pytest.mark.parametrize(
    ("change", "error", "field"),
    [
        ({"instance_type": "ml.p5.48xlarge"}, InvalidRequest, "ResourceConfig.InstanceType"),
        ({"tags": [{"Key": "priority", "Value": "high"}]}, InvalidRequest, "Tags"),
    ],
)
def test_api_refusals_raise_with_the_api_message(
    world: QueueWorld, bucket: str, source_dir: Path, change: dict[str, Any], error: type[Exception], field: str
) -> None:
    estimator = make_estimator(make_session(world), source_dir, **change)

    with pytest.raises(error) as raised:
        estimator.fit(wait=False, job_name="refused")

    assert raised.value.field is not None and raised.value.field.startswith(field)
    assert raised.value.message
    assert world.store.get("refused") is None


def test_a_duplicate_unfinished_name_is_a_conflict(world: QueueWorld, bucket: str, source_dir: Path) -> None:
    session = make_session(world)
    make_estimator(session, source_dir).fit(wait=False, job_name="twice")

    with pytest.raises(JobConflict) as raised:
        make_estimator(session, source_dir).fit(wait=False, job_name="twice")

    assert "twice" in raised.value.message


# ---------------------------------------------------------------------- describing


def test_describe_before_any_attempt_is_built_from_the_request(
    world: QueueWorld, bucket: str, source_dir: Path
) -> None:
    occupy_pool(world)
    estimator = make_estimator(make_session(world), source_dir)
    estimator.fit(wait=False, job_name="waiting-job")

    description = estimator.latest_training_job.describe()

    assert description["TrainingJobName"] == "waiting-job"
    assert description["TrainingJobStatus"] == "InProgress"
    assert description["SecondaryStatus"] == "Pending"
    assert "position 1 in ml.m5.xlarge" in description["SecondaryStatusTransitions"][-1]["StatusMessage"]
    assert description["TrainingJobArn"] == "arn:aws:sagemaker:us-east-1:123456789012:training-job/waiting-job"
    assert description["HyperParameters"]["epochs"] == "3"
    assert description["ResourceConfig"]["InstanceType"] == POOL
    assert "Tags" not in description


def test_describe_of_a_running_job_is_its_attempt_and_model_data_follows_it(
    world: QueueWorld, bucket: str, source_dir: Path
) -> None:
    estimator = make_estimator(make_session(world), source_dir)
    estimator.fit(wait=False, job_name="quick")
    attempt = world.attempt_name("quick")
    world.progress("quick", "InProgress", secondary_status="Training")

    running = estimator.latest_training_job.describe()
    world.progress("quick", "Completed", secondary_status="Completed")

    assert (running["TrainingJobName"], running["SecondaryStatus"]) == (attempt, "Training")
    assert estimator.model_data == f"s3://{BUCKET}/{attempt}/output/model.tar.gz"


def test_a_preempted_job_is_still_in_progress_for_the_sdk(world: QueueWorld, bucket: str, source_dir: Path) -> None:
    session = make_session(world)
    estimator = make_estimator(session, source_dir)
    estimator.fit(wait=False, job_name="low")
    world.progress("low", "InProgress", secondary_status="Training")
    session.queue_training_job(training_request("high"), priority=50)

    preempting = estimator.latest_training_job.describe()
    world.finish_stops()
    requeued = estimator.latest_training_job.describe()

    assert (preempting["TrainingJobStatus"], preempting["SecondaryStatus"]) == ("InProgress", "Interrupted")
    assert (requeued["TrainingJobStatus"], requeued["SecondaryStatus"]) == ("InProgress", "Pending")


def test_other_training_jobs_are_described_by_sagemaker(world: QueueWorld, bucket: str) -> None:
    session = make_session(world)
    occupy_pool(world)
    attempt = world.attempt_name("blocker")

    assert session.describe_training_job(attempt)["TrainingJobName"] == attempt
    assert session.is_queue_job("blocker") and not session.is_queue_job(attempt)


def test_stopping_the_training_job_cancels_it_in_the_queue(world: QueueWorld, bucket: str, source_dir: Path) -> None:
    occupy_pool(world)
    estimator = make_estimator(make_session(world), source_dir)
    estimator.fit(wait=False, job_name="unwanted")

    estimator.latest_training_job.stop()

    assert world.job("unwanted").state == "cancelled"


# ---------------------------------------------------------------------- waiting


def test_fit_follows_the_job_through_preemption_and_streams_each_attempts_logs(
    world: QueueWorld, bucket: str, source_dir: Path, capsys: pytest.CaptureFixture[str], offline: list[str]
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
    estimator = make_estimator(make_session(world, sleep=script), source_dir, tags=[{"Key": "priority", "Value": "1"}])

    estimator.fit(job_name="vit")

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
    ]
    positions = [output.find(text) for text in expected_in_order]
    assert -1 not in positions, output
    assert positions == sorted(positions), output
    assert output.count("resumed from checkpoint step 5") == 1
    assert estimator.latest_training_job.describe()["TrainingJobStatus"] == "Completed"
    assert estimator.model_data == f"s3://{BUCKET}/{attempts[1]}/output/model.tar.gz"
    assert offline == []


def test_fit_raises_the_sdk_error_when_the_job_fails(world: QueueWorld, bucket: str, source_dir: Path) -> None:
    script = Script(lambda: world.progress("doomed", "Failed", failure_reason="AlgorithmError: loss is NaN"))
    estimator = make_estimator(make_session(world, sleep=script), source_dir)

    with pytest.raises(exceptions.UnexpectedStatusException) as raised:
        estimator.fit(job_name="doomed", logs="None")

    assert raised.value.actual_status == "Failed"
    assert "loss is NaN" in str(raised.value)


def test_fit_raises_the_sdk_error_when_the_job_is_cancelled(world: QueueWorld, bucket: str, source_dir: Path) -> None:
    occupy_pool(world)

    def someone_cancels() -> None:
        api(world).cancel_job("cancelled-job")

    estimator = make_estimator(make_session(world, sleep=Script(someone_cancels)), source_dir)

    with pytest.raises(exceptions.UnexpectedStatusException) as raised:
        estimator.fit(job_name="cancelled-job")

    assert raised.value.actual_status == "Stopped"
    assert "cancelled" in str(raised.value)


def test_waiting_reports_position_changes_while_queued(
    world: QueueWorld, bucket: str, source_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    occupy_pool(world)
    api(world).add_job(training_request("ahead", priority=5))

    def the_job_ahead_leaves() -> None:
        api(world).cancel_job("ahead")

    def the_blocker_leaves() -> None:
        world.progress("blocker", "Completed", secondary_status="Completed")

    script = Script(
        the_job_ahead_leaves,
        the_blocker_leaves,
        lambda: world.progress("patient", "Completed", secondary_status="Completed"),
    )
    estimator = make_estimator(make_session(world, sleep=script), source_dir)

    estimator.fit(job_name="patient", logs="None")

    output = capsys.readouterr().out
    assert "patient is pending at position 2 in ml.m5.xlarge" in output
    assert "patient is at position 1 in ml.m5.xlarge" in output
    assert "starting attempt 1 of patient" in output


# ---------------------------------------------------------------------- offline facts


def test_the_default_bucket_is_found_through_the_configured_sts_endpoint(
    world: QueueWorld, moto_url: str, offline: list[str]
) -> None:
    session = QueueTrainingJobSession(api_url=world.url, sagemaker_client=FakeSageMakerClient(world.sagemaker))

    bucket = session.default_bucket()

    assert bucket == "sagemaker-us-east-1-123456789012"
    assert bucket in [b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"]]
    assert offline == []


def test_telemetry_is_opted_out_of_without_touching_the_callers_config(world: QueueWorld) -> None:
    config = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"RemoteFunction": {}}}}}
    original = copy.deepcopy(config)

    session = QueueTrainingJobSession(api_url=world.url, sagemaker_config=config)
    kept = QueueTrainingJobSession(api_url=world.url, telemetry_opt_out=False)

    assert session.sagemaker_config["SageMaker"]["PythonSDK"]["Modules"]["TelemetryOptOut"] is True
    assert session.sagemaker_config["SageMaker"]["PythonSDK"]["Modules"]["RemoteFunction"] == {}
    assert config == original
    assert "TelemetryOptOut" not in str(kept.sagemaker_config)


def test_fit_sends_telemetry_only_when_the_session_opts_back_in(
    world: QueueWorld, bucket: str, source_dir: Path, sdk_telemetry_calls: list[str]
) -> None:
    quiet = QueueTrainingJobSession(api_url=world.url, default_bucket=BUCKET)
    make_estimator(quiet, source_dir).fit(wait=False, job_name="quiet")
    make_estimator(make_session(world, telemetry_opt_out=False), source_dir).fit(wait=False, job_name="chatty")

    assert len(sdk_telemetry_calls) == 1
    assert "estimator.fit" in sdk_telemetry_calls[0]


def test_logs_for_a_finished_job_print_every_attempt_without_waiting(
    world: QueueWorld, bucket: str, source_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = TrainingLogs(boto3.client("logs"))
    session = make_session(world)
    make_estimator(session, source_dir).fit(wait=False, job_name="finished")
    logs.write(world.attempt_name("finished"), "epoch 1 done")
    world.progress("finished", "InProgress", secondary_status="Training")
    world.progress("finished", "Completed", secondary_status="Completed")

    description = session.logs_for_job("finished")

    assert "epoch 1 done" in capsys.readouterr().out
    assert description["TrainingJobStatus"] == "Completed"
