"""Managed warm pools in the local SageMaker service: retention for the keep-alive period, reuse by a
matching job that starts without provisioning, UpdateTrainingJob, and WarmPoolStatus in
DescribeTrainingJob, ListTrainingJobs and the state-change events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError
from smq.local.sagemaker import PhaseTimings

from tests.local_sagemaker.conftest import Stack, synthetic_job, unique

pytestmark = pytest.mark.slow  # real waits for keep-alive periods: the full suite runs them

SLOW_START = PhaseTimings(starting=1.0, downloading=0.02, uploading=0.02, restart=0.1, metric_interval=0.2)
"""A cold start long enough that skipping it shows in SecondaryStatusTransitions."""
MODEL = botocore.session.get_session().get_service_model("sagemaker")


def warm_job(name: str, keep_alive: int | None = 60, duration: float = 0.05, **overrides: Any) -> dict[str, Any]:
    request = synthetic_job(name, duration=duration, **overrides)
    if keep_alive is not None:
        request["ResourceConfig"] = {**request["ResourceConfig"], "KeepAlivePeriodInSeconds": keep_alive}
    return request


def warm_status(stack: Stack, name: str) -> dict[str, Any] | None:
    return stack.client.describe_training_job(TrainingJobName=name).get("WarmPoolStatus")


def finished(stack: Stack, request: dict[str, Any]) -> dict[str, Any]:
    stack.client.create_training_job(**request)
    return stack.wait(request["TrainingJobName"])


def starting(description: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in description["SecondaryStatusTransitions"] if t["Status"] == "Starting")


def seconds_starting(description: dict[str, Any]) -> float:
    transition = starting(description)
    return float((transition["EndTime"] - transition["StartTime"]).total_seconds())


def test_a_finished_job_keeps_its_cluster_available_for_the_keep_alive_period(synthetic: Stack) -> None:
    name = unique("warm")
    description = finished(synthetic, warm_job(name, keep_alive=1))

    assert description["WarmPoolStatus"]["Status"] == "Available"
    synthetic.wait_events(name, "Completed")
    completed = [e for e in synthetic.events if e["detail"]["SecondaryStatus"] == "Completed"]
    assert completed[-1]["detail"]["WarmPoolStatus"]["Status"] == "Available"
    available = synthetic.client.list_training_jobs(WarmPoolStatusEquals="Available")["TrainingJobSummaries"]
    assert [s["TrainingJobName"] for s in available] == [name]

    ended = synthetic.wait(name, lambda d: d["WarmPoolStatus"]["Status"] == "Terminated", timeout=10)

    assert ended["WarmPoolStatus"] == {"Status": "Terminated", "ResourceRetainedBillableTimeInSeconds": 1}
    assert synthetic.client.list_training_jobs(WarmPoolStatusEquals="Available")["TrainingJobSummaries"] == []


def test_a_matching_job_takes_the_warm_pool_over_and_skips_provisioning(make_stack: Callable[..., Stack]) -> None:
    stack = make_stack(timings=SLOW_START)
    first, second = unique("first"), unique("second")
    cold = finished(stack, warm_job(first))

    stack.client.create_training_job(**warm_job(second, duration=30))
    running = stack.wait_secondary(second, "Training")

    assert running["WarmPoolStatus"] == {"Status": "InUse"}
    assert warm_status(stack, first) == {
        "Status": "Reused",
        "ResourceRetainedBillableTimeInSeconds": pytest.approx(0, abs=5),
        "ReusedByJob": second,
    }
    warm = starting(running)
    assert warm["StatusMessage"] == f"Reusing the warm pool of training job {first}"
    assert seconds_starting(running) < SLOW_START.starting <= seconds_starting(cold)
    stack.wait_events(second, "Training")
    assert [e["detail"]["WarmPoolStatus"] for e in stack.events if e["detail"]["TrainingJobName"] == second] == [
        {"Status": "InUse"}
    ] * 3

    stack.client.stop_training_job(TrainingJobName=second)
    assert stack.wait(second)["WarmPoolStatus"]["Status"] == "Available"


DIFFERENT: dict[str, dict[str, Any]] = {
    "instance type": {"ResourceConfig": {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30}},
    "volume size": {"ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 40}},
    "role": {"RoleArn": "arn:aws:iam::000000000000:role/Other"},
    "network isolation": {"EnableNetworkIsolation": True},
}


def test_jobs_differing_in_one_criterion_start_cold(synthetic: Stack) -> None:
    first = unique("first")
    finished(synthetic, warm_job(first))

    for difference in DIFFERENT.values():
        description = finished(synthetic, warm_job(unique("other"), **difference))
        assert starting(description)["StatusMessage"] == "Launching requested ML instances"
    assert warm_status(synthetic, first)["Status"] == "Available"  # type: ignore[index]


def test_a_job_without_its_own_keep_alive_period_does_not_reuse(synthetic: Stack) -> None:
    first, second = unique("first"), unique("second")
    finished(synthetic, warm_job(first))

    description = finished(synthetic, warm_job(second, keep_alive=None))

    assert "WarmPoolStatus" not in description
    assert warm_status(synthetic, first)["Status"] == "Available"  # type: ignore[index]


def test_an_algorithm_error_keeps_the_cluster(synthetic: Stack) -> None:
    assert finished(synthetic, warm_job(unique("job"), outcome="fail"))["WarmPoolStatus"]["Status"] == "Available"


def test_an_instance_failure_terminates_the_warm_pool(synthetic: Stack) -> None:
    name = unique("lost")
    synthetic.client.create_training_job(**warm_job(name, duration=30))
    synthetic.wait_secondary(name, "Training")
    synthetic.service.inject(name, "fail")

    assert synthetic.wait(name)["WarmPoolStatus"] == {"Status": "Terminated"}


def test_update_training_job_ends_retention(synthetic: Stack) -> None:
    name = unique("warm")
    finished(synthetic, warm_job(name, keep_alive=3600))

    synthetic.client.update_training_job(TrainingJobName=name, ResourceConfig={"KeepAlivePeriodInSeconds": 0})

    description = synthetic.client.describe_training_job(TrainingJobName=name)
    assert description["WarmPoolStatus"]["Status"] == "Terminated"
    assert description["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 0
    with pytest.raises(ClientError, match="is Terminated") as refused:
        synthetic.client.update_training_job(TrainingJobName=name, ResourceConfig={"KeepAlivePeriodInSeconds": 60})
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_update_training_job_lengthens_retention_and_validates_like_sagemaker(synthetic: Stack) -> None:
    name = unique("warm")
    finished(synthetic, warm_job(name, keep_alive=1))

    synthetic.client.update_training_job(TrainingJobName=name, ResourceConfig={"KeepAlivePeriodInSeconds": 600})

    assert synthetic.wait(name, lambda d: d["WarmPoolStatus"]["Status"] == "Available")
    with pytest.raises(ClientError, match="keepAlivePeriodInSeconds") as refused:
        synthetic.client.update_training_job(TrainingJobName=name, ResourceConfig={"KeepAlivePeriodInSeconds": 30000})
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError, match="ResourceNotFound"):
        synthetic.client.update_training_job(TrainingJobName="nope", ResourceConfig={"KeepAlivePeriodInSeconds": 0})


def test_the_shapes_are_botocores(synthetic: Stack) -> None:
    first, second = unique("first"), unique("second")
    finished(synthetic, warm_job(first))
    finished(synthetic, warm_job(second))
    warm = MODEL.shape_for("WarmPoolStatus")

    for name in (first, second):
        raw = synthetic.service._jobs.describe_training_job({"TrainingJobName": name})
        assert set(raw) <= set(MODEL.operation_model("DescribeTrainingJob").output_shape.members)
        assert set(raw["WarmPoolStatus"]) <= set(warm.members)
        assert set(warm.required_members) <= set(raw["WarmPoolStatus"])
    summaries = synthetic.service._jobs.list_training_jobs({})["TrainingJobSummaries"]
    assert {s["WarmPoolStatus"]["Status"] for s in summaries} == {"Reused", "Available"}
    assert all(set(s) <= set(MODEL.shape_for("TrainingJobSummary").members) for s in summaries)
