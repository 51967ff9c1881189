"""Job lifecycles, events and faults, with the synthetic executor (no processes: fast).

Tests assert what happens and in which order, never how long it took: every wait has a generous
deadline that only a job stuck for good reaches (timings belong in bench/).
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Stack, aws, gpu_utilization, synthetic_job, unique, wait_for_gpu_utilization

DOCUMENTED_EVENT = json.loads((Path(__file__).parent / "documented_event.json").read_text())


def test_a_job_passes_through_every_phase_and_emits_an_event_for_each(synthetic: Stack) -> None:
    name = unique("life")
    synthetic.client.create_training_job(**synthetic_job(name, duration=0.2))

    description = synthetic.wait(name)
    synthetic.wait_events(name, "Completed")

    expected = [
        ("InProgress", "Starting"),
        ("InProgress", "Downloading"),
        ("InProgress", "Training"),
        ("InProgress", "Uploading"),
        ("Completed", "Completed"),
    ]
    assert synthetic.statuses(name) == expected
    transitions = description["SecondaryStatusTransitions"]
    assert [t["Status"] for t in transitions] == [s for _, s in expected]
    assert all(t["StartTime"] <= t["EndTime"] for t in transitions)
    assert all(a["EndTime"] == b["StartTime"] for a, b in itertools.pairwise(transitions))
    assert all(t["StatusMessage"] for t in transitions)
    assert (
        description["CreationTime"]
        <= description["TrainingStartTime"]
        < description["TrainingEndTime"]
        == description["LastModifiedTime"]
    )
    assert description["BillableTimeInSeconds"] >= 1
    assert "FailureReason" not in description


def test_a_completed_synthetic_job_reports_its_model_artifacts(synthetic: Stack, aws_env: dict[str, str]) -> None:
    name = unique("artifacts")
    synthetic.client.create_training_job(**synthetic_job(name, duration=0.1))

    description = synthetic.wait(name)

    uri = description["ModelArtifacts"]["S3ModelArtifacts"]
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    assert key.endswith(f"{name}/output/model.tar.gz")
    assert aws("s3", aws_env).head_object(Bucket=bucket, Key=key)["ContentLength"] > 0


def test_describe_echoes_the_request(synthetic: Stack) -> None:
    name = unique("echo")
    request = synthetic_job(
        name,
        duration=30,
        EnableManagedSpotTraining=True,
        CheckpointConfig={"S3Uri": "s3://smq-test/ckpt/echo"},
        StoppingCondition={"MaxRuntimeInSeconds": 600, "MaxWaitTimeInSeconds": 1200},
    )
    arn = synthetic.client.create_training_job(**request)["TrainingJobArn"]

    description = synthetic.client.describe_training_job(TrainingJobName=name)

    assert description["TrainingJobArn"] == arn == (f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{name}")
    for member in (
        "HyperParameters",
        "AlgorithmSpecification",
        "RoleArn",
        "OutputDataConfig",
        "ResourceConfig",
        "StoppingCondition",
        "CheckpointConfig",
    ):
        assert description[member] == request[member], member
    assert description["EnableManagedSpotTraining"] is True
    assert description["TrainingJobStatus"] == "InProgress"


def test_events_have_the_documented_shape(synthetic: Stack) -> None:
    name = unique("shape")
    synthetic.client.create_training_job(
        **synthetic_job(
            name, duration=0.1, Tags=[{"Key": "smq:job", "Value": "job1"}, {"Key": "smq:attempt", "Value": "1"}]
        )
    )
    synthetic.wait(name)
    synthetic.wait_events(name, "Completed")

    event = synthetic.events[-1]
    documented = {k: v for k, v in DOCUMENTED_EVENT.items() if not k.startswith("_")}
    assert set(event) == set(documented)
    assert set(event["detail"]) >= set(documented["detail"])
    assert event["detail-type"] == "SageMaker Training Job State Change"
    assert event["source"] == "aws.sagemaker"
    assert event["resources"] == [event["detail"]["TrainingJobArn"]]
    assert event["detail"]["Tags"] == {"smq:job": "job1", "smq:attempt": "1"}
    for member in ("CreationTime", "TrainingStartTime", "TrainingEndTime", "LastModifiedTime"):
        assert isinstance(event["detail"][member], int)  # epoch millis, as documented
        assert event["detail"][member] > 1_500_000_000_000
    transition = event["detail"]["SecondaryStatusTransitions"][0]
    assert set(transition) == {"Status", "StartTime", "EndTime", "StatusMessage"}
    assert isinstance(transition["StartTime"], int)
    assert time.strptime(event["time"], "%Y-%m-%dT%H:%M:%SZ")
    assert len({e["id"] for e in synthetic.events}) == len(synthetic.events)


def test_a_stopped_synthetic_job_goes_from_training_through_stopping_to_stopped(synthetic: Stack) -> None:
    name = unique("stop")
    synthetic.client.create_training_job(**synthetic_job(name, duration=3600))
    synthetic.wait_secondary(name, "Training")

    synthetic.client.stop_training_job(TrainingJobName=name)
    description = synthetic.wait(name)

    assert (description["TrainingJobStatus"], description["SecondaryStatus"]) == ("Stopped", "Stopped")
    transitions = description["SecondaryStatusTransitions"]
    assert [t["Status"] for t in transitions][-3:] == ["Training", "Stopping", "Stopped"]
    assert all(a["EndTime"] == b["StartTime"] for a, b in itertools.pairwise(transitions))
    synthetic.wait_events(name, "Stopped")
    assert synthetic.statuses(name)[-3:] == [
        ("InProgress", "Training"),
        ("Stopping", "Stopping"),
        ("Stopped", "Stopped"),
    ]


def test_a_job_stopped_while_starting_never_trains(make_stack: Any) -> None:
    from smq.local.sagemaker import PhaseTimings

    # Starting lasts far longer than any wait below: only a stop that cuts it short ends the job.
    stack = make_stack(timings=PhaseTimings(starting=3600.0))
    name = unique("early")
    stack.client.create_training_job(**synthetic_job(name))
    stack.client.stop_training_job(TrainingJobName=name)

    stack.wait(name)
    stack.wait_events(name, "Stopped")
    assert [s for _, s in stack.statuses(name)] == ["Starting", "Stopping", "Stopped"]


def test_a_failing_synthetic_job_fails_with_a_reason(synthetic: Stack) -> None:
    name = unique("fail")
    synthetic.client.create_training_job(**synthetic_job(name, duration=0.1, outcome="fail"))

    description = synthetic.wait(name)

    assert (description["TrainingJobStatus"], description["SecondaryStatus"]) == ("Failed", "Failed")
    assert description["FailureReason"].startswith("AlgorithmError")
    synthetic.wait_events(name, "Failed")
    assert synthetic.events[-1]["detail"]["FailureReason"] == description["FailureReason"]


def test_max_runtime_exceeded_stops_the_job(synthetic: Stack) -> None:
    name = unique("maxrun")
    synthetic.client.create_training_job(
        **synthetic_job(name, outcome="hang", duration=0, StoppingCondition={"MaxRuntimeInSeconds": 1})
    )

    description = synthetic.wait(name)

    assert (description["TrainingJobStatus"], description["SecondaryStatus"]) == ("Stopped", "MaxRuntimeExceeded")
    assert [t["Status"] for t in description["SecondaryStatusTransitions"]][-3:] == [
        "Training",
        "Stopping",
        "MaxRuntimeExceeded",
    ]
    assert "FailureReason" not in description


def test_max_wait_time_exceeded_stops_a_spot_job(make_stack: Any) -> None:
    from smq.local.sagemaker import PhaseTimings

    # Both limits are 1 s, but the wait counts from creation, the runtime from Training: with a
    # Starting phase that outlasts any wait below, only the wait limit can end the job.
    stack = make_stack(timings=PhaseTimings(starting=3600.0))
    name = unique("maxwait")
    stack.client.create_training_job(
        **synthetic_job(
            name,
            duration=30,
            EnableManagedSpotTraining=True,
            StoppingCondition={"MaxRuntimeInSeconds": 1, "MaxWaitTimeInSeconds": 1},
        )
    )

    description = stack.wait(name)

    assert (description["TrainingJobStatus"], description["SecondaryStatus"]) == ("Stopped", "MaxWaitTimeExceeded")
    assert "Training" not in [t["Status"] for t in description["SecondaryStatusTransitions"]]


@pytest.mark.slow
def test_a_spot_interruption_restarts_the_job_where_it_was(synthetic: Stack) -> None:
    """The interruption lands 9 s before the job would end, a margin a loaded machine keeps (3 s
    was not, with four test workers on two cores); resumed, it trains those 9 s again, restarted all
    14."""
    duration, trained_before_interruption = 14.0, 5.0
    name = unique("spot")
    synthetic.client.create_training_job(
        **synthetic_job(
            name,
            duration=duration,
            EnableManagedSpotTraining=True,
            CheckpointConfig={"S3Uri": "s3://smq-test/ckpt/spot"},
        )
    )
    synthetic.wait_secondary(name, "Training")
    time.sleep(trained_before_interruption)

    synthetic.service.inject(name, "interrupt")
    description = synthetic.wait(name)

    assert description["TrainingJobStatus"] == "Completed"
    transitions = description["SecondaryStatusTransitions"]
    assert [t["Status"] for t in transitions] == [
        "Starting",
        "Downloading",
        "Training",
        "Interrupted",
        "Starting",
        "Downloading",
        "Training",
        "Uploading",
        "Completed",
    ]
    second_training = transitions[6]
    # Restarted from scratch, it would train for the whole duration again; resumed, it trains only
    # what was left. The margin between the two is seconds, not a timing claim.
    assert (second_training["EndTime"] - second_training["StartTime"]).total_seconds() < duration
    assert description["BillableTimeInSeconds"] <= description["TrainingTimeInSeconds"]
    synthetic.wait_events(name, "Completed")
    assert ("InProgress", "Interrupted") in synthetic.statuses(name)


def test_only_spot_jobs_can_be_interrupted(synthetic: Stack) -> None:
    from smq.local.sagemaker import ValidationError

    name = unique("ondemand")
    synthetic.client.create_training_job(**synthetic_job(name, duration=30))

    with pytest.raises(ValidationError) as raised:
        synthetic.service.inject(name, "interrupt")

    assert "spot" in raised.value.message


def test_an_injected_failure_fails_the_job(synthetic: Stack) -> None:
    name = unique("inject-fail")
    synthetic.client.create_training_job(**synthetic_job(name, duration=30))
    synthetic.wait_secondary(name, "Training")

    synthetic.service.inject(name, "fail")
    description = synthetic.wait(name)

    assert description["TrainingJobStatus"] == "Failed"
    assert description["FailureReason"].startswith("InternalServerError")


def test_a_hung_job_keeps_training_and_reports_idle_gpus_on_every_host(
    synthetic: Stack, aws_env: dict[str, str]
) -> None:
    name = unique("hang")
    resources = {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30}
    synthetic.client.create_training_job(**synthetic_job(name, duration=0.5, outcome="hang", ResourceConfig=resources))
    synthetic.wait_secondary(name, "Training")

    reported = [wait_for_gpu_utilization(aws_env, name, host, lambda seen: seen[0] == 0.0) for host in (1, 2)]

    assert reported == [(0.0, 100.0), (0.0, 100.0)]  # busy while it trained, idle once hung
    assert gpu_utilization(aws_env, name, 3) is None
    assert synthetic.client.describe_training_job(TrainingJobName=name)["SecondaryStatus"] == ("Training")


def test_event_handlers_may_call_the_service_back(make_stack: Any) -> None:
    """The handler runs on the dispatcher thread, with no lock held: calling in cannot deadlock."""
    seen: list[str] = []
    name = unique("reentrant")

    def handler(event: dict[str, Any]) -> None:
        described = stack.client.describe_training_job(TrainingJobName=name)
        seen.append(described["TrainingJobStatus"])
        if event["detail"]["SecondaryStatus"] == "Training":
            stack.client.stop_training_job(TrainingJobName=name)

    stack: Stack = make_stack(handler=handler)
    stack.client.create_training_job(**synthetic_job(name, duration=30))

    assert stack.wait(name)["TrainingJobStatus"] == "Stopped"
    stack.wait_events(name, "Stopped")
    deadline = time.monotonic() + 20
    while len(seen) < len(stack.statuses(name)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen[-1] == "Stopped"
