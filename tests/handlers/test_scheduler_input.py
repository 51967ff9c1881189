"""Reading what reaches the scheduler without pydantic (handlers/scheduler_input.py), and when a
handler is traced (handlers/tracing.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from smq_lambda.handlers.scheduler_input import Kick, Malformed, is_sqs_batch, message, state_change
from smq_lambda.handlers.tracing import tracing_enabled

TESTS = Path(__file__).resolve().parents[1]
BATCH = json.loads((TESTS / "events" / "scheduler_batch.json").read_text())
DOCUMENTED = {
    key: value
    for key, value in json.loads((TESTS / "local_sagemaker" / "documented_event.json").read_text()).items()
    if not key.startswith("_")
}


def changed(**detail: Any) -> dict[str, Any]:
    event = copy.deepcopy(DOCUMENTED)
    event["detail"].update(detail)
    return event


def test_the_documented_state_change_is_read_into_a_status() -> None:
    transitions = [{"Status": "Starting", "StartTime": 1583831889050}]
    event = changed(
        FailureReason="AlgorithmError: boom",
        TrainingTimeInSeconds=42,
        SecondaryStatusTransitions=transitions,
        Tags={"smq:job": "kmeans", "smq:attempt": "2"},
    )

    change = state_change(event)

    status = change.status
    assert (status.name, status.status, status.secondary_status) == (
        "89c96cc8-dded-4739-afcc-6f1dc936701d",
        "Completed",
        "Completed",
    )
    assert (status.failure_reason, status.training_time_seconds) == ("AlgorithmError: boom", 42)
    assert status.secondary_status_transitions == tuple(transitions)
    assert status.tags == {"smq:job": "kmeans", "smq:attempt": "2"}
    assert change.detail is event["detail"]


@pytest.mark.parametrize(
    "event",
    [
        changed(TrainingJobName=""),
        changed(TrainingJobStatus=None),
        changed(SecondaryStatus=3),
        changed(TrainingTimeInSeconds="12"),
        changed(TrainingTimeInSeconds=True),
        changed(Tags={"smq:job": 1}),
        changed(SecondaryStatusTransitions=["Starting"]),
        {**DOCUMENTED, "detail": "no"},
        {**DOCUMENTED, "detail-type": "SageMaker HyperParameter Tuning Job State Change"},
    ],
)
def test_what_is_not_a_training_job_state_change_is_malformed(event: dict[str, Any]) -> None:
    with pytest.raises(Malformed):
        state_change(event)


def test_a_message_is_a_state_change_or_a_kick() -> None:
    assert message(json.dumps(DOCUMENTED)).status.name == DOCUMENTED["detail"]["TrainingJobName"]  # type: ignore[union-attr]
    assert message('{"source": "smq.api", "reason": "job a added"}') == Kick("job a added")
    assert message('{"source": "smq.api"}') == Kick(None)
    for body in ["", "{", "null", '{"source": "aws.events"}']:
        with pytest.raises(Malformed):
            message(body)


def test_an_sqs_batch_is_told_from_other_events() -> None:
    assert is_sqs_batch(BATCH)
    sns = {"Records": [{"EventSource": "aws:sns", "Sns": {}}]}
    mixed = {"Records": [*BATCH["Records"], sns["Records"][0]]}
    for event in [sns, mixed, {"Records": []}, {"source": "aws.events"}, [], None]:
        assert not is_sqs_batch(event)


@pytest.mark.parametrize(
    ("environment", "enabled"),
    [
        ({"LAMBDA_TASK_ROOT": "/var/task"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "false"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "1"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "AWS_SAM_LOCAL": "true"}, False),
        ({}, False),
    ],
)
def test_handlers_are_traced_where_the_powertools_tracer_would_trace(
    environment: dict[str, str], enabled: bool
) -> None:
    assert tracing_enabled(environment) is enabled
