"""The local EventBridge for the events the local SageMaker service emits: every event goes to the
queues of the template's rules whose pattern matches it, as EventBridge puts an event on an SQS
target (the message body is the event's JSON), through moto's SQS.

Sending happens on one thread of its own, so the service's event thread never waits for moto, and
events leave in the order they were published. For tests it can misbehave on purpose (`Chaos`): an
event is dropped (not sent), duplicated (sent twice) or held back a random time, so that later events
overtake it.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from smq.local.event_router import Chaos, describe
from smq.local.template import matches

log = logging.getLogger("smq.local.events")

Route = tuple[Mapping[str, Any], str]
"""(event pattern, queue URL)."""


class EventBus:
    def __init__(self, sqs_client: Callable[[], Any], routes: Sequence[Route], *, chaos: Chaos | None = None) -> None:
        """`sqs_client` makes the boto3 SQS client the sending thread uses."""
        self._sqs_client = sqs_client
        self._routes = list(routes)
        self._chaos = chaos or Chaos()
        self._random = random.Random(self._chaos.seed)
        self._pending: list[tuple[float, int, str, str]] = []
        self._order = itertools.count()
        self._cv = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._send_forever, name="smq-eventbridge", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def publish(self, event: dict[str, Any]) -> None:
        """Accept an event (the local SageMaker service's `on_event`)."""
        queues = [queue_url for pattern, queue_url in self._routes if matches(pattern, event)]
        if not queues:
            log.debug("no rule matches %s", describe(event))
            return
        if self._random.random() < self._chaos.drop:
            log.info("chaos: dropped %s", describe(event))
            return
        copies = 2 if self._random.random() < self._chaos.duplicate else 1
        body = json.dumps(event)
        with self._cv:
            for queue_url in queues:
                for _ in range(copies):
                    due = time.monotonic() + self._random.uniform(0, self._chaos.max_delay_seconds)
                    heapq.heappush(self._pending, (due, next(self._order), queue_url, body))
            self._cv.notify_all()

    def shutdown(self) -> None:
        """Stop sending (events still held back by chaos are dropped) and join the thread."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        if self._thread.ident is not None:
            self._thread.join(timeout=10)

    def _send_forever(self) -> None:
        sqs = self._sqs_client()
        while True:
            with self._cv:
                while not self._stopping and (not self._pending or self._pending[0][0] > time.monotonic()):
                    self._cv.wait(self._pending[0][0] - time.monotonic() if self._pending else None)
                if self._stopping:
                    return
                _, _, queue_url, body = heapq.heappop(self._pending)
            try:
                sqs.send_message(QueueUrl=queue_url, MessageBody=body)
            except Exception:  # EventBridge would retry, then dead-letter; reconciliation repairs a loss
                log.exception("could not put an event on %s", queue_url)
