"""EventBridge "SageMaker Training Job State Change" events, and their delivery.

The detail is the DescribeTrainingJob shape with the changes the AWS documentation's example
shows: `Tags` as a map, `VpcConfig` always present, and timestamps as epoch milliseconds.
"""

from __future__ import annotations

import copy
import logging
import queue
import threading
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

DETAIL_TYPE = "SageMaker Training Job State Change"
SOURCE = "aws.sagemaker"
_TIMES = ("CreationTime", "TrainingStartTime", "TrainingEndTime", "LastModifiedTime")

logger = logging.getLogger(__name__)


def epoch_millis(seconds: float) -> int:
    return round(seconds * 1000)


def state_change_event(
    description: Mapping[str, Any], tags: Mapping[str, str], *, account: str, region: str
) -> dict[str, Any]:
    """The event for a job whose DescribeTrainingJob output (epoch seconds) is `description`."""
    detail = copy.deepcopy(dict(description))
    for name in _TIMES:
        if name in detail:
            detail[name] = epoch_millis(detail[name])
    for transition in detail.get("SecondaryStatusTransitions", []):
        for name in ("StartTime", "EndTime"):
            if name in transition:
                transition[name] = epoch_millis(transition[name])
    detail.setdefault("VpcConfig", {})
    detail.setdefault("InputDataConfig", [])
    detail["Tags"] = dict(tags)
    changed = datetime.fromtimestamp(description["LastModifiedTime"], UTC)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": DETAIL_TYPE,
        "source": SOURCE,
        "account": account,
        "time": changed.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [description["TrainingJobArn"]],
        "detail": detail,
    }


class EventDispatcher:
    """Calls `on_event` on its own thread, in publication order.

    Publishers hold the job registry's lock; the handler may call back into the service
    (DescribeTrainingJob, StopTrainingJob), so it must never run on a publisher's thread.
    """

    _CLOSE = object()

    def __init__(self, on_event: Callable[[dict[str, Any]], None]) -> None:
        self._on_event = on_event
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._deliver, name="sagemaker-events", daemon=True)
        self._thread.start()

    def publish(self, event: dict[str, Any]) -> None:
        self._queue.put(event)

    def close(self, timeout: float) -> None:
        """Deliver what was published, then stop."""
        self._queue.put(self._CLOSE)
        self._thread.join(timeout)

    def _deliver(self) -> None:
        while (event := self._queue.get()) is not self._CLOSE:
            try:
                self._on_event(event)
            except Exception:  # a handler bug must not stop later deliveries
                logger.exception("on_event failed for %s", event["detail"]["TrainingJobName"])
