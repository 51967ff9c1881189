"""SQS events for the scheduler handler, in the shape Lambda gives a function subscribed to a queue
(tests/events/scheduler_batch.json)."""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "events" / "scheduler_batch.json").read_text())
DOCUMENTED_RECORD_KEYS = {
    "messageId",
    "receiptHandle",
    "body",
    "attributes",
    "messageAttributes",
    "md5OfBody",
    "eventSource",
    "eventSourceARN",
    "awsRegion",
}


def record(body: str) -> dict[str, Any]:
    """A record of the fixture's shape carrying `body`, with a message id of its own."""
    made = copy.deepcopy(FIXTURE["Records"][0])
    made.update(messageId=str(uuid.uuid4()), body=body, md5OfBody=hashlib.md5(body.encode()).hexdigest())
    return made


def batch(*bodies: str | dict[str, Any]) -> dict[str, Any]:
    """An SQS event whose records carry `bodies` (an event dict becomes its JSON, as EventBridge
    puts it on the queue)."""
    return {"Records": [record(body if isinstance(body, str) else json.dumps(body)) for body in bodies]}
