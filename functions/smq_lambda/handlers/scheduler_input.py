"""What reaches the scheduler, read without a schema library: the powertools parser's pydantic
models cost about 60 ms of CPU at every cold start for a handful of fields.

- An SQS batch from the scheduler queue: each record's body is either a SageMaker training job
  state change (the EventBridge event as EventBridge puts it on a queue target) or the API's request
  for a pass (`{"source": "smq.api", "reason": ...}`, adapters/sqs_trigger.py).
- A direct invocation: the reconciliation schedule's event (source `aws.events`), a state change
  (tests, older stacks) or anything else, which only asks for a pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.domain.sagemaker.warm_pool_status import warm_pool_status_of

SAGEMAKER_SOURCE = "aws.sagemaker"
SCHEDULE_SOURCE = "aws.events"
KICK_SOURCE = "smq.api"
"""adapters/sqs_trigger.TRIGGER_SOURCE (a test keeps the two equal)."""
STATE_CHANGE = "SageMaker Training Job State Change"


class Malformed(ValueError):
    """Not something the scheduler reads: logged and dropped, never retried."""


@dataclass(frozen=True)
class StateChange:
    detail: Mapping[str, Any]
    """The event's detail as SageMaker sent it (DescribeTrainingJob's members, Tags as a map)."""
    status: TrainingJobStatus

    @property
    def training_job_name(self) -> str:
        return self.status.name


@dataclass(frozen=True)
class Kick:
    reason: str | None


def is_sqs_batch(event: object) -> bool:
    """An event source mapping's SQS batch: `Records` whose event source is `aws:sqs`."""
    if not isinstance(event, dict):
        return False
    records = event.get("Records")
    return (
        isinstance(records, list)
        and bool(records)
        and all(isinstance(record, dict) and record.get("eventSource") == "aws:sqs" for record in records)
    )


def message(body: str) -> StateChange | Kick:
    """One scheduler queue message; raises Malformed for anything else."""
    try:
        event = json.loads(body)
    except (TypeError, ValueError) as exc:
        raise Malformed(f"the body is not JSON: {exc}") from exc
    if not isinstance(event, dict):
        raise Malformed("the body is not a JSON object")
    source = event.get("source")
    if source == KICK_SOURCE:
        reason = event.get("reason")
        return Kick(reason if isinstance(reason, str) else None)
    if source == SAGEMAKER_SOURCE:
        return state_change(event)
    raise Malformed(f"unknown source {source!r}")


def state_change(event: Mapping[str, Any]) -> StateChange:
    """A "SageMaker Training Job State Change" event; raises Malformed when it is not one."""
    if event.get("detail-type") != STATE_CHANGE:
        raise Malformed(f"not a training job state change: detail-type {event.get('detail-type')!r}")
    detail = event.get("detail")
    if not isinstance(detail, dict):
        raise Malformed("the event has no detail object")
    tags = detail.get("Tags", {})
    if not isinstance(tags, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items()):
        raise Malformed("Tags is not a map of strings")
    transitions = detail.get("SecondaryStatusTransitions") or []
    if not isinstance(transitions, list) or not all(isinstance(item, dict) for item in transitions):
        raise Malformed("SecondaryStatusTransitions is not a list of objects")
    training_time = _optional_seconds(detail, "TrainingTimeInSeconds")
    billable_time = _optional_seconds(detail, "BillableTimeInSeconds")
    status = TrainingJobStatus(
        name=_text(detail, "TrainingJobName"),
        status=_text(detail, "TrainingJobStatus"),
        secondary_status=_optional_text(detail, "SecondaryStatus"),
        failure_reason=_optional_text(detail, "FailureReason"),
        tags=tags,
        secondary_status_transitions=tuple(transitions),
        training_time_seconds=training_time,
        billable_time_seconds=billable_time,
        warm_pool=warm_pool_status_of(detail),
    )
    return StateChange(detail=detail, status=status)


def _text(detail: Mapping[str, Any], key: str) -> str:
    value = detail.get(key)
    if not isinstance(value, str) or not value:
        raise Malformed(f"{key} is not a string")
    return value


def _optional_seconds(detail: Mapping[str, Any], key: str) -> int | None:
    value = detail.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise Malformed(f"{key} is not a non-negative integer")
    return value


def _optional_text(detail: Mapping[str, Any], key: str) -> str | None:
    value = detail.get(key)
    if value is not None and not isinstance(value, str):
        raise Malformed(f"{key} is not a string")
    return value
