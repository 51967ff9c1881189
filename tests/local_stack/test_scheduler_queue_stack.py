"""The local stack's scheduler input: SageMaker state changes and the API's kicks reach the scheduler
only through the scheduler queue (moto's SQS), in batches; lost and duplicated messages still end in
the right job states, reconciliation repairing what was lost; a message the scheduler keeps failing
ends in the queue's dead-letter queue; and every thread the stack started is joined at stop."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.event_router import Chaos
from smq.local.stack import LocalStack, LocalStackOptions
from smq_lambda.handlers import scheduler

from tests.e2e.local import POOL, synthetic_request, wait_for

pytestmark = pytest.mark.slow

FINISHED = {"completed", "failed", "cancelled"}


class Invocations:
    """Every event the scheduler handler gets, recorded in front of the real handler (the stack
    imports the template's Handler at each invocation, as a warm Lambda calls it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[dict[str, Any]] = []
        real = scheduler.handler

        def recording(event: dict[str, Any], context: Any) -> Any:
            self.events.append(json.loads(json.dumps(event)))
            return real(event, context)

        monkeypatch.setattr(scheduler, "handler", recording)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(record["body"]) for event in self.events for record in event.get("Records", [])]


def stack_threads() -> set[str]:
    return {thread.name for thread in threading.enumerate() if thread.name.startswith(("smq-", "sagemaker-"))}


def test_state_changes_and_kicks_reach_the_scheduler_through_its_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invocations = Invocations(monkeypatch)
    before = stack_threads()
    options = LocalStackOptions(
        capacity={POOL: 1}, executor="synthetic", workdir=tmp_path, reconcile_every_seconds=None
    )
    with LocalStack(options) as local:
        client = SmqApiClient(local.api_url, region="us-east-1")
        client.add_job(synthetic_request("first", duration=1))
        client.add_job(synthetic_request("second", duration=1, outcome="fail"))
        states = [wait_for(client, name, FINISHED, timeout=60)["state"] for name in ("first", "second")]
        queue_arn = local.boto3_client("sqs").get_queue_attributes(
            QueueUrl=local.queue_url("SchedulerQueue"), AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        assert "AWS_ENDPOINT_URL_LAMBDA" not in local.client_env  # nothing invokes the scheduler directly
    assert stack_threads() == before  # every thread the stack started was joined

    assert states == ["completed", "failed"]
    assert invocations.events, "the scheduler was never invoked"
    for event in invocations.events:  # no reconciliation, so every invocation was a batch
        assert {record["eventSourceARN"] for record in event["Records"]} == {queue_arn}
    bodies = invocations.bodies()
    kicks = [body["reason"] for body in bodies if body.get("source") == "smq.api"]
    assert any("first" in reason for reason in kicks) and any("second" in reason for reason in kicks)
    changes = Counter(
        (body["detail"]["Tags"]["smq:job"], body["detail"]["TrainingJobStatus"])
        for body in bodies
        if body.get("source") == "aws.sagemaker"
    )
    assert changes[("first", "Completed")] == 1 and changes[("second", "Failed")] == 1
    assert len(invocations.events) < len(bodies)  # some batches held more than one message


def test_lost_and_duplicated_messages_still_end_in_the_right_states(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    invocations = Invocations(monkeypatch)
    chaos = Chaos(duplicate=0.5, drop=0.3, max_delay_seconds=0.5, seed=11)
    options = LocalStackOptions(
        capacity={POOL: 1}, executor="synthetic", workdir=tmp_path, reconcile_every_seconds=1, chaos=chaos
    )
    with LocalStack(options) as chaotic:
        caplog.set_level(logging.INFO, logger="smq.local.events")
        client = SmqApiClient(chaotic.api_url, region="us-east-1")
        outcomes = {"ok0": "complete", "bad": "fail", "ok1": "complete", "long": "complete"}
        for index, (name, outcome) in enumerate(outcomes.items()):
            duration = 300 if name == "long" else 1
            client.add_job(synthetic_request(name, priority=index, duration=duration, outcome=outcome))
        wait_for(client, "long", {"running"}, timeout=90)
        client.cancel_job("long")
        states = {name: wait_for(client, name, FINISHED, timeout=90)["state"] for name in outcomes}

    assert states == {"ok0": "completed", "bad": "failed", "ok1": "completed", "long": "cancelled"}
    dropped = [record for record in caplog.records if record.getMessage().startswith("chaos: dropped")]
    assert dropped, "chaos dropped nothing: reconciliation had nothing to repair"
    ids = Counter(body["id"] for body in invocations.bodies() if body.get("source") == "aws.sagemaker")
    assert max(ids.values()) >= 2, "chaos duplicated nothing"


def test_a_message_the_scheduler_keeps_failing_is_parked_in_the_dead_letter_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = scheduler.handler

    def failing_the_poison(event: dict[str, Any], context: Any) -> Any:
        answer = real(event, context)
        poisoned = [record for record in event.get("Records", []) if record["body"] == "poison"]
        if poisoned:  # an unreadable body is dropped by the real handler; pretend it failed
            answer = {"batchItemFailures": [{"itemIdentifier": record["messageId"]} for record in poisoned]}
        return answer

    monkeypatch.setattr(scheduler, "handler", failing_the_poison)
    options = LocalStackOptions(
        capacity={POOL: 1},
        executor="synthetic",
        workdir=tmp_path,
        reconcile_every_seconds=None,
        queue_visibility_timeout_seconds=1,
    )
    with LocalStack(options) as local:
        sqs = local.boto3_client("sqs")
        sqs.send_message(QueueUrl=local.queue_url("SchedulerQueue"), MessageBody="poison")
        dead_letters = local.queue_url("SchedulerQueueDeadLetterQueue")
        deadline = time.monotonic() + 60
        parked: list[dict[str, Any]] = []
        while not parked and time.monotonic() < deadline:
            parked = sqs.receive_message(QueueUrl=dead_letters, WaitTimeSeconds=1).get("Messages", [])
    assert [message["Body"] for message in parked] == ["poison"]
