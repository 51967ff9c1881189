"""The local stack's SQS plumbing against moto (in process): the event source mapping's poller
(batches in Lambda's event shape, partial batch responses, redelivery, the redrive policy) and the
local EventBridge that puts the SageMaker service's events on the queue, with its chaos."""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from smq.local.event_bus import EventBus
from smq.local.event_router import Chaos
from smq.local.sqs_event_source import SqsEventSource

from tests.support.aws import REGION, use_test_credentials
from tests.support.sqs import DOCUMENTED_RECORD_KEYS

PATTERN = {"source": ["aws.sagemaker"], "detail-type": ["SageMaker Training Job State Change"]}


class Queues:
    def __init__(self) -> None:
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.dead_letters = self.sqs.create_queue(QueueName="dead-letters")["QueueUrl"]
        dead_letters_arn = self.arn(self.dead_letters)
        redrive = json.dumps({"deadLetterTargetArn": dead_letters_arn, "maxReceiveCount": 2})
        self.url = self.sqs.create_queue(
            QueueName="scheduler", Attributes={"VisibilityTimeout": "1", "RedrivePolicy": redrive}
        )["QueueUrl"]

    def arn(self, url: str) -> str:
        return self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    def client(self) -> Any:
        return boto3.client("sqs", region_name=REGION)

    def bodies(self, url: str) -> list[str]:
        messages = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
        return [message["Body"] for message in messages.get("Messages", [])]


@pytest.fixture
def queues(monkeypatch: pytest.MonkeyPatch) -> Iterator[Queues]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        yield Queues()


class Function:
    """A handler that hands every event it gets to the test, and answers what `answer` says."""

    def __init__(self, answer: Callable[[dict[str, Any]], Any] = lambda event: None) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.answer = answer
        self.running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            self.events.put(event)
            return self.answer(event)
        finally:
            with self._lock:
                self.running -= 1

    def next(self, timeout: float = 10) -> dict[str, Any]:
        return self.events.get(timeout=timeout)


def poller(queues: Queues, function: Function, **options: Any) -> SqsEventSource:
    source = SqsEventSource(
        queues.client,
        queues.url,
        queues.arn(queues.url),
        function,
        function_name="smq-scheduler",
        visibility_timeout_seconds=1,
        **options,
    )
    source.start()
    return source


def test_messages_arrive_in_one_batch_in_the_event_lambda_gives(queues: Queues) -> None:
    function = Function()
    for index in range(5):
        queues.sqs.send_message(
            QueueUrl=queues.url,
            MessageBody=json.dumps({"n": index}),
            MessageAttributes={"kind": {"DataType": "String", "StringValue": "test"}},
        )
    source = poller(queues, function, batch_size=10, batching_window_seconds=1)
    try:
        event = function.next()
    finally:
        source.shutdown()

    records = event["Records"]
    assert [json.loads(record["body"]) for record in records] == [{"n": index} for index in range(5)]
    for record in records:
        assert set(record) >= DOCUMENTED_RECORD_KEYS
        assert (record["eventSource"], record["eventSourceARN"], record["awsRegion"]) == (
            "aws:sqs",
            queues.arn(queues.url),
            REGION,
        )
        assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
        assert record["attributes"]["ApproximateReceiveCount"] == "1"
        assert {"SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} <= set(record["attributes"])
        assert record["messageAttributes"]["kind"]["stringValue"] == "test"
        assert record["messageAttributes"]["kind"]["dataType"] == "String"
    assert queues.bodies(queues.url) == []  # all deleted


def test_a_batch_is_at_most_batch_size(queues: Queues) -> None:
    function = Function()
    for index in range(7):
        queues.sqs.send_message(QueueUrl=queues.url, MessageBody=str(index))
    source = poller(queues, function, batch_size=3, batching_window_seconds=1)
    try:
        sizes = [len(function.next()["Records"]) for _ in range(3)]
    finally:
        source.shutdown()
    assert sizes == [3, 3, 1]


@pytest.mark.slow  # waits for visibility timeouts
def test_only_the_reported_failures_come_back_after_the_visibility_timeout(queues: Queues) -> None:
    def fail_the_bad_one(event: dict[str, Any]) -> dict[str, Any]:
        return {
            "batchItemFailures": [
                {"itemIdentifier": record["messageId"]} for record in event["Records"] if record["body"] == "bad"
            ]
        }

    function = Function(fail_the_bad_one)
    for body in ("good", "bad", "fine"):
        queues.sqs.send_message(QueueUrl=queues.url, MessageBody=body)
    source = poller(queues, function, batch_size=10, batching_window_seconds=1)
    try:
        first = function.next()
        again = function.next()
    finally:
        source.shutdown()

    assert sorted(record["body"] for record in first["Records"]) == ["bad", "fine", "good"]
    [retried] = again["Records"]
    assert (retried["body"], retried["attributes"]["ApproximateReceiveCount"]) == ("bad", "2")


@pytest.mark.slow  # waits for visibility timeouts
def test_a_handler_that_raises_gets_the_whole_batch_again(queues: Queues) -> None:
    calls = []

    def raise_once(event: dict[str, Any]) -> None:
        calls.append(event)
        if len(calls) == 1:
            raise RuntimeError("the pass failed")

    function = Function(raise_once)
    for body in ("a", "b"):
        queues.sqs.send_message(QueueUrl=queues.url, MessageBody=body)
    source = poller(queues, function, batch_size=10, batching_window_seconds=1)
    try:
        first, again = function.next(), function.next()
    finally:
        source.shutdown()
    assert sorted(record["body"] for record in first["Records"]) == ["a", "b"]
    assert sorted(record["body"] for record in again["Records"]) == ["a", "b"]
    assert queues.bodies(queues.url) == []


@pytest.mark.slow  # waits for visibility timeouts
def test_a_message_that_keeps_failing_is_parked_in_the_dead_letter_queue(queues: Queues) -> None:
    def always_fail(event: dict[str, Any]) -> dict[str, Any]:
        return {"batchItemFailures": [{"itemIdentifier": record["messageId"]} for record in event["Records"]]}

    function = Function(always_fail)
    queues.sqs.send_message(QueueUrl=queues.url, MessageBody="poison")
    source = poller(queues, function, batch_size=10, batching_window_seconds=0)
    try:
        counts = [function.next()["Records"][0]["attributes"]["ApproximateReceiveCount"] for _ in range(2)]
        deadline = time.monotonic() + 10
        while not (parked := queues.bodies(queues.dead_letters)) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        source.shutdown()
    assert counts == ["1", "2"]  # maxReceiveCount 2
    assert parked == ["poison"]
    assert function.events.empty()


def test_an_unreadable_partial_response_fails_the_whole_batch(queues: Queues) -> None:
    answers = iter([{"batchItemFailures": [{"itemIdentifier": ""}]}, None])
    function = Function(lambda event: next(answers))
    queues.sqs.send_message(QueueUrl=queues.url, MessageBody="x")
    source = poller(queues, function, batch_size=10, batching_window_seconds=0)
    try:
        function.next()
        assert function.next()["Records"][0]["body"] == "x"
    finally:
        source.shutdown()


def test_shutdown_joins_the_poller_of_an_idle_queue(queues: Queues) -> None:
    source = poller(queues, Function(), batch_size=10, batching_window_seconds=0)
    started = time.monotonic()
    source.shutdown()
    assert time.monotonic() - started < 5
    assert not [thread for thread in threading.enumerate() if thread.name == "smq-sqs-smq-scheduler"]


# ---------------------------------------------------------------- the local EventBridge


def state_change(name: str, status: str = "InProgress") -> dict[str, Any]:
    return {
        "source": "aws.sagemaker",
        "detail-type": "SageMaker Training Job State Change",
        "detail": {"TrainingJobName": name, "TrainingJobStatus": status},
    }


def bus(queues: Queues, chaos: Chaos | None = None) -> EventBus:
    started = EventBus(queues.client, [(PATTERN, queues.url)], chaos=chaos)
    started.start()
    return started


def wait_for_bodies(queues: Queues, count: int, timeout: float = 10) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    bodies: list[dict[str, Any]] = []
    while len(bodies) < count and time.monotonic() < deadline:
        received = queues.sqs.receive_message(QueueUrl=queues.url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for message in received.get("Messages", []):
            bodies.append(json.loads(message["Body"]))
            queues.sqs.delete_message(QueueUrl=queues.url, ReceiptHandle=message["ReceiptHandle"])
    return bodies


def test_a_matching_event_is_the_body_of_one_message_in_order(queues: Queues) -> None:
    events = bus(queues)
    try:
        for name in ("a", "b", "c"):
            events.publish(state_change(name))
        events.publish({**state_change("other"), "detail-type": "SageMaker Endpoint State Change"})
        bodies = wait_for_bodies(queues, 3)
    finally:
        events.shutdown()
    assert bodies == [state_change(name) for name in ("a", "b", "c")]
    assert queues.bodies(queues.url) == []  # the endpoint event matched no rule


@pytest.mark.parametrize(
    ("chaos", "expected"),
    [(Chaos(drop=1.0), 0), (Chaos(duplicate=1.0), 2), (Chaos(drop=0.0, duplicate=0.0, max_delay_seconds=0.3), 1)],
)
def test_chaos_drops_duplicates_and_delays_messages(queues: Queues, chaos: Chaos, expected: int) -> None:
    events = bus(queues, chaos)
    try:
        events.publish(state_change("a"))
        bodies = wait_for_bodies(queues, expected, timeout=3)
    finally:
        events.shutdown()
    assert bodies == [state_change("a")] * expected


def test_delays_let_later_events_overtake_earlier_ones(queues: Queues) -> None:
    events = bus(queues, Chaos(max_delay_seconds=0.5, seed=1))
    try:
        for index in range(20):
            events.publish(state_change(f"job{index}"))
        names = [body["detail"]["TrainingJobName"] for body in wait_for_bodies(queues, 20)]
    finally:
        events.shutdown()
    assert sorted(names) == sorted(f"job{index}" for index in range(20))
    assert names != [f"job{index}" for index in range(20)]
