"""Lambda's SQS event source mapping, on one machine: one thread polls a queue of moto's SQS and
invokes a function's handler with batches, in the event Lambda gives a function consuming a queue.

As Lambda does: a batch is gathered for up to the batching window (or until it holds `batch_size`
messages), the handler gets the `Records` event, the messages it did not report in
`batchItemFailures` are deleted, and the reported ones (or the whole batch, if the handler raised)
stay on the queue, to be received again once their visibility timeout ends; after the queue's
maxReceiveCount receives, moto moves them to the dead-letter queue of its RedrivePolicy.

Unlike Lambda, one thread polls, so the function never runs twice at once from here; and the local
stack gives these queues a visibility timeout of seconds instead of the template's (see
LocalStackOptions.queue_visibility_timeout_seconds), so a failed message comes back quickly. A batch
is received with a visibility timeout longer by the batching window, so no message of it comes back
while the batch is still being gathered.
"""

from __future__ import annotations

import base64
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from smq.local.lambda_context import LambdaContext

log = logging.getLogger("smq.local.events")

Handler = Callable[[dict[str, Any], Any], Any]
MAX_RECEIVE = 10
"""ReceiveMessage returns at most 10 messages per call."""
IDLE_WAIT_SECONDS = 1
"""Long poll of an idle queue: no CPU while nothing arrives, and `shutdown` waits at most this."""
_SYSTEM_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "AWSTraceHeader",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "DeadLetterQueueSourceArn",
)
"""The attributes Lambda passes on in a record's `attributes`, when the message has them."""


class SqsEventSource:
    def __init__(
        self,
        sqs_client: Callable[[], Any],
        queue_url: str,
        queue_arn: str,
        handler: Handler,
        *,
        function_name: str,
        batch_size: int = 10,
        batching_window_seconds: float = 0,
        visibility_timeout_seconds: int = 2,
        region: str = "us-east-1",
    ) -> None:
        """`sqs_client` makes the boto3 SQS client the polling thread uses."""
        self._sqs_client = sqs_client
        self._queue_url = queue_url
        self._queue_arn = queue_arn
        self._handler = handler
        self._function_name = function_name
        self._batch_size = batch_size
        self._window = batching_window_seconds
        self._visibility = visibility_timeout_seconds + math.ceil(batching_window_seconds)
        self._region = region
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._poll_forever, name=f"smq-sqs-{function_name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def shutdown(self) -> None:
        """Stop polling and join the thread (after the invocation in progress, if any)."""
        self._stopping.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=30)

    def _poll_forever(self) -> None:
        sqs = self._sqs_client()
        while not self._stopping.is_set():
            try:
                messages = self._gather(sqs)
            except Exception:  # moto restarting or stopping: try again shortly
                if not self._stopping.is_set():
                    log.exception("could not receive from %s", self._queue_url)
                    self._stopping.wait(1)
                continue
            if messages:
                self._invoke(sqs, messages)

    def _gather(self, sqs: Any) -> list[dict[str, Any]]:
        """One batch: the first messages (long-polling an idle queue), then more until the batch is
        full or the batching window since the first ones has passed."""
        batch = self._receive(sqs, IDLE_WAIT_SECONDS)
        deadline = time.monotonic() + self._window
        while batch and len(batch) < self._batch_size and not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            batch += self._receive(sqs, min(math.ceil(left), 20))
        return batch

    def _receive(self, sqs: Any, wait_seconds: int) -> list[dict[str, Any]]:
        response = sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=min(MAX_RECEIVE, self._batch_size),
            WaitTimeSeconds=wait_seconds,
            VisibilityTimeout=self._visibility,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return list(response.get("Messages", []))

    def _invoke(self, sqs: Any, messages: list[dict[str, Any]]) -> None:
        event = {"Records": [self._record(message) for message in messages]}
        try:
            response = self._handler(event, LambdaContext.for_function(self._function_name))
        except Exception:
            log.exception("%s failed on a batch of %d; it is delivered again", self._function_name, len(messages))
            return
        failed = _failed_ids(response, messages)
        done = [message for message in messages if message["MessageId"] not in failed]
        for start in range(0, len(done), MAX_RECEIVE):
            entries = [
                {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
                for index, message in enumerate(done[start : start + MAX_RECEIVE])
            ]
            sqs.delete_message_batch(QueueUrl=self._queue_url, Entries=entries)

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        """The record Lambda makes of a received message."""
        attributes = message.get("Attributes", {})
        record = {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": {name: attributes[name] for name in _SYSTEM_ATTRIBUTES if name in attributes},
            "messageAttributes": {
                name: _message_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
            },
            "md5OfBody": message["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": self._queue_arn,
            "awsRegion": self._region,
        }
        if "MD5OfMessageAttributes" in message:
            record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
        return record


def _message_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """A message attribute in the record's spelling, binary values base64-encoded."""

    def encoded(data: bytes) -> str:
        return base64.b64encode(data).decode()

    attribute: dict[str, Any] = {
        "stringListValues": list(value.get("StringListValues", [])),
        "binaryListValues": [encoded(item) for item in value.get("BinaryListValues", [])],
        "dataType": value["DataType"],
    }
    if "StringValue" in value:
        attribute["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        attribute["binaryValue"] = encoded(value["BinaryValue"])
    return attribute


def _failed_ids(response: object, messages: list[dict[str, Any]]) -> set[str]:
    """The messages a partial batch response reports failed. A response Lambda cannot read (an
    itemIdentifier that is empty, missing or not of this batch) fails the whole batch, as in Lambda."""
    if not isinstance(response, dict) or not response.get("batchItemFailures"):
        return set()
    ids = {message["MessageId"] for message in messages}
    failed = set()
    for failure in response["batchItemFailures"]:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not identifier or identifier not in ids:
            log.warning("unreadable batchItemFailures %r: the whole batch is delivered again", failure)
            return ids
        failed.add(identifier)
    return failed
