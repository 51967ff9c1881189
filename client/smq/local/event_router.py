"""Delivers events to one function's handler the way Lambda's asynchronous invocations would, on
one machine: the reconciliation schedule's events, Lambda's `Invoke` call and SNS notifications.
(SageMaker state changes and the API's kicks go through the scheduler's SQS queue instead:
event_bus.py and sqs_event_source.py.)

One worker thread calls the handler, so the function never runs twice at once from here. Delivery is
at least once: a handler that raises gets the event again after a short delay, like Lambda's
asynchronous retries. It serves Lambda's `Invoke` call (boto3 `lambda.invoke(InvocationType="Event")`
through `AWS_ENDPOINT_URL_LAMBDA`), and it is an HTTP endpoint an SNS topic (moto's) can be
subscribed to, whose notifications it hands to the handler as the SNS event Lambda gives a
subscribed function.

For tests it can misbehave on purpose (`Chaos`, also used by event_bus.py): duplicate, delay,
reorder or drop events.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from smq.local.lambda_context import LambdaContext

log = logging.getLogger("smq.local.events")

Handler = Callable[[dict[str, Any], Any], Any]
RETRY_DELAY_SECONDS = 1.0
MAX_ATTEMPTS = 3
"""Lambda retries a failed asynchronous invocation twice."""
SNS_PATH = "/sns"
"""Where an SNS topic's HTTP subscription delivers: `<router url>/sns`."""


@dataclass
class Chaos:
    """Deliberate misdelivery, for tests of at-least-once and out-of-order tolerance."""

    duplicate: float = 0.0
    drop: float = 0.0
    max_delay_seconds: float = 0.0
    """Each event waits a random time up to this before delivery, so events overtake each other."""
    seed: int = 0


def scheduled_event() -> dict[str, Any]:
    """The EventBridge Scheduler event of the template's reconciliation rule."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "000000000000",
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:000000000000:rule/smq-reconcile"],
        "detail": {},
    }


def sns_event(notification: dict[str, Any]) -> dict[str, Any]:
    """The event Lambda gives a function subscribed to a topic, made from the notification SNS posts
    to an HTTP subscriber: the same members, two spelt differently, and the subscription named by
    the notification's unsubscribe URL."""
    unsubscribe = notification["UnsubscribeURL"]
    (subscription,) = parse_qs(urlparse(unsubscribe).query)["SubscriptionArn"]
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription,
                "Sns": {
                    "Type": notification["Type"],
                    "MessageId": notification["MessageId"],
                    "TopicArn": notification["TopicArn"],
                    "Subject": notification.get("Subject"),
                    "Message": notification["Message"],
                    "Timestamp": notification["Timestamp"],
                    "SignatureVersion": notification["SignatureVersion"],
                    "Signature": notification["Signature"],
                    "SigningCertUrl": notification["SigningCertURL"],
                    "UnsubscribeUrl": unsubscribe,
                    "MessageAttributes": notification.get("MessageAttributes", {}),
                },
            }
        ]
    }


class EventRouter:
    def __init__(
        self,
        handler: Handler,
        *,
        function_name: str = "smq-scheduler",
        reconcile_every_seconds: float | None = 30.0,
        chaos: Chaos | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._handler = handler
        self._function_name = function_name
        self._chaos = chaos or Chaos()
        self._random = random.Random(self._chaos.seed)
        self._queue: list[tuple[float, int, dict[str, Any], int]] = []
        self._order = itertools.count()
        self._cv = threading.Condition()
        self._stopping = False
        self._host = host
        self._server = ThreadingHTTPServer((host, port), self._http_handler())
        self._server.daemon_threads = True
        self._threads = [
            threading.Thread(target=self._serve_http, name="smq-lambda-invoke", daemon=True),
            threading.Thread(target=self._deliver_forever, name="smq-event-router", daemon=True),
        ]
        if reconcile_every_seconds:
            self._threads.append(
                threading.Thread(
                    target=self._reconcile_forever, args=(reconcile_every_seconds,), name="smq-reconcile", daemon=True
                )
            )

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._server.server_port}"

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def publish(self, event: dict[str, Any]) -> None:
        """Accept an event (from the local SageMaker service or an async invoke)."""
        if self._random.random() < self._chaos.drop:
            log.info("chaos: dropped %s", describe(event))
            return
        copies = 2 if self._random.random() < self._chaos.duplicate else 1
        for _ in range(copies):
            delay = self._random.uniform(0, self._chaos.max_delay_seconds)
            self._enqueue(event, delay, attempt=1)

    def _enqueue(self, event: dict[str, Any], delay: float, attempt: int) -> None:
        with self._cv:
            heapq.heappush(self._queue, (time.monotonic() + delay, next(self._order), event, attempt))
            self._cv.notify_all()

    def shutdown(self) -> None:
        """Stop serving and delivering; safe on a router never started (a stack that failed to
        start), whose server's shutdown would otherwise wait forever."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        started = [thread for thread in self._threads if thread.ident is not None]
        if started:
            self._server.shutdown()
        self._server.server_close()
        for thread in started:
            thread.join(timeout=10)

    def _deliver_forever(self) -> None:
        while True:
            with self._cv:
                while not self._stopping and (not self._queue or self._queue[0][0] > time.monotonic()):
                    timeout = self._queue[0][0] - time.monotonic() if self._queue else None
                    self._cv.wait(timeout)
                if self._stopping:
                    return
                _, _, event, attempt = heapq.heappop(self._queue)
            try:
                self._handler(event, LambdaContext.for_function(self._function_name))
            except Exception:
                log.exception("scheduler failed on %s (attempt %d)", describe(event), attempt)
                if attempt < MAX_ATTEMPTS:
                    self._enqueue(event, RETRY_DELAY_SECONDS, attempt + 1)

    def _reconcile_forever(self, every_seconds: float) -> None:
        while True:
            with self._cv:
                if self._cv.wait_for(lambda: self._stopping, timeout=every_seconds):
                    return
            self.publish(scheduled_event())

    def _serve_http(self) -> None:
        self._server.serve_forever(poll_interval=0.2)

    def _http_handler(self) -> type[BaseHTTPRequestHandler]:
        router = self

        class InvokeHandler(BaseHTTPRequestHandler):
            """Lambda's `POST /2015-03-31/functions/{name}/invocations` for InvocationType=Event, and
            SNS's HTTP delivery to `POST /sns`."""

            def do_POST(self) -> None:  # http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b"{}"
                if self.path == SNS_PATH:
                    self._deliver_notification(body)
                    return
                if "/functions/" not in self.path or not self.path.endswith("/invocations"):
                    self._reply(HTTPStatus.NOT_FOUND, {"Type": "User", "Message": "unknown path"})
                    return
                try:
                    payload = json.loads(body or b"{}")
                except ValueError:
                    self._reply(HTTPStatus.BAD_REQUEST, {"Type": "User", "Message": "payload is not JSON"})
                    return
                router.publish(payload if isinstance(payload, dict) else {"payload": payload})
                self._reply(HTTPStatus.ACCEPTED, None)

            def _deliver_notification(self, body: bytes) -> None:
                """Answer at once (SNS's delivery waits for it); the handler runs on the worker."""
                try:
                    event = sns_event(json.loads(body))
                except (ValueError, KeyError, TypeError):
                    self._reply(HTTPStatus.BAD_REQUEST, {"Message": "not an SNS notification"})
                    return
                router.publish(event)
                self._reply(HTTPStatus.OK, None)

            def _reply(self, status: HTTPStatus, body: dict[str, Any] | None) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status >= 400:
                    self.send_header("X-Amzn-ErrorType", "InvalidRequestContentException")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # the stdlib's signature
                log.debug(format, *args)

        return InvokeHandler


def describe(event: dict[str, Any]) -> str:
    if isinstance(event.get("Records"), list):
        return f"SNS notification from {event['Records'][0]['Sns']['TopicArn']}"
    detail = event.get("detail")
    if not isinstance(detail, dict):
        detail = {}
    name = detail.get("TrainingJobName")
    status = detail.get("TrainingJobStatus")
    return f"{event.get('source')} {name or ''} {status or ''}".strip()
