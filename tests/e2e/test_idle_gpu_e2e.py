"""End to end on the local stack (`smq local up --alarm-period-seconds 1`): a queued job whose GPUs
sit idle is stopped through the same path as in AWS (its CloudWatch alarm, the idle topic, the idle
handler) and ends failed, not re-queued, with its alarm gone; a busy job is watched but runs to the
end. The synthetic executor reports busy GPUs on every host, and idle ones once a job hangs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions
from smq_lambda.domain.jobs.outcomes import AttemptOutcome

from tests.e2e.local import POOL, synthetic_request, wait_for

FINISHED = {"completed", "failed", "cancelled"}
POLICY = {"idle": {"period_seconds": 60, "evaluation_periods": 2}}
"""Two idle periods stop a job; locally each lasts one second (`alarm_period_seconds`)."""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        capacity={POOL: 2},
        executor="synthetic",
        workdir=tmp_path_factory.mktemp("idle-stack"),
        # No reconciliation: it re-checks alarms in ALARM too, and would hide an idle-stop function
        # that cannot act (a permission missing from its role once passed here that way).
        reconcile_every_seconds=None,
        policy=POLICY,
        alarm_period_seconds=1,
    )
    with LocalStack(options) as running:
        yield running


@pytest.fixture
def client(stack: LocalStack) -> SmqApiClient:
    return SmqApiClient(stack.api_url, region="us-east-1")


def idle_alarms(stack: LocalStack, training_job: str) -> list[dict[str, Any]]:
    prefix = f"{stack.idle_alarm_prefix}{training_job}"
    alarms = stack.boto3_client("cloudwatch").describe_alarms(AlarmNamePrefix=prefix)
    return list(alarms["MetricAlarms"])


def test_the_functions_and_the_alarm_evaluator_use_the_templates_prefix(stack: LocalStack) -> None:
    """Every handler runs in this process, with the environment the template gives it."""
    assert stack.idle_alarm_prefix == os.environ["SMQ_IDLE_ALARM_PREFIX"] == "smq-idle-smq."


def wait_until(what: str, check: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.2)
    return found


def test_a_hung_job_is_stopped_as_idle_and_its_alarm_deleted(stack: LocalStack, client: SmqApiClient) -> None:
    client.add_job(synthetic_request("hung", duration=0.5, outcome="hang"))
    training_job = wait_for(client, "hung", {"running"})["training_job_name"]
    wait_until("the hung job's alarm", lambda: idle_alarms(stack, training_job))

    job = wait_for(client, "hung", FINISHED, timeout=60)

    assert job["state"] == "failed", job
    assert job["reason"].startswith("idle GPU: every host at or below 1% GPU utilization for 2 consecutive periods")
    (attempt,) = job["attempts"]
    assert (attempt["outcome"], attempt["reason"]) == (AttemptOutcome.IDLE_GPU, job["reason"])
    sagemaker = stack.boto3_client("sagemaker")
    assert sagemaker.describe_training_job(TrainingJobName=training_job)["TrainingJobStatus"] == "Stopped"
    wait_until("the alarm is deleted", lambda: not idle_alarms(stack, training_job))
    assert len(client.get_job("hung")["attempts"]) == 1  # never queued again


def test_a_busy_job_is_watched_and_runs_to_the_end(stack: LocalStack, client: SmqApiClient) -> None:
    client.add_job(synthetic_request("busy", duration=6))
    training_job = wait_for(client, "busy", {"running"})["training_job_name"]
    (alarm,) = wait_until("the busy job's alarm", lambda: idle_alarms(stack, training_job))

    job = wait_for(client, "busy", FINISHED, timeout=60)

    assert alarm["Metrics"][0]["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": "Host", "Value": f"{training_job}/algo-1"}
    ]
    assert job["state"] == "completed", job
    assert [attempt["outcome"] for attempt in job["attempts"]] == ["completed"]
    wait_until("the alarm is deleted", lambda: not idle_alarms(stack, training_job))
