"""A queue job told as a DescribeTrainingJob answer, for SDK code that only knows training jobs.

An estimator knows its job by the queue name, and asks SageMaker's questions about it. The answer
is the latest attempt as SageMaker describes it, or one built from the request while no attempt
exists, with the status the queue gives the whole job on top: a preempted job is `InProgress`, not
`Stopped`, and the queue's own changes appear as secondary status transitions.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from smq.jobs import current_attempt, now_utc, parse_time

QUEUE_STATUS: dict[str, tuple[str, str | None]] = {
    "pending": ("InProgress", "Pending"),
    "starting": ("InProgress", "Starting"),
    "running": ("InProgress", None),
    "preempting": ("InProgress", "Interrupted"),
    "stopping": ("Stopping", "Stopping"),
    "completed": ("Completed", None),
    "failed": ("Failed", "Failed"),
    "cancelled": ("Stopped", "Stopped"),
}
"""DescribeTrainingJob status of a queue job per queue state; a None secondary status keeps
SageMaker's (Downloading, Training, Uploading...)."""

_NOT_DESCRIBED = frozenset({"TrainingJobName", "Tags"})
"""Request members DescribeTrainingJob does not echo back."""


def with_queue_status(description: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, Any]:
    """Put the queue job's status on a description, recording the override as a transition."""
    status, secondary = QUEUE_STATUS[job["state"]]
    result = dict(description)
    if secondary is None:
        if result.get("TrainingJobStatus") == status:
            return result
        secondary = "Completed" if status == "Completed" else "Training"
    if result.get("TrainingJobStatus") == status and result.get("SecondaryStatus") == secondary:
        return result
    when = parse_time(job.get("updated_at")) or now_utc()
    message = status_message(job)
    result.update(TrainingJobStatus=status, SecondaryStatus=secondary)
    result["SecondaryStatusTransitions"] = [
        *(result.get("SecondaryStatusTransitions") or ()),
        {"Status": secondary, "StartTime": when, "StatusMessage": message},
    ]
    if status == "Failed":
        result["FailureReason"] = job.get("reason") or result.get("FailureReason") or message
    return result


def status_message(job: Mapping[str, Any]) -> str:
    """The queue's state in the words of a secondary status message."""
    reason = job.get("reason")
    state = job["state"]
    if state == "pending":
        waiting = f"Waiting in the smq queue: position {job.get('position')} in {job.get('pool')}"
        return f"{waiting} ({reason})" if reason else waiting
    if state == "starting":
        attempt = current_attempt(job)
        return f"Starting attempt {attempt['number'] if attempt else 1} through the smq queue"
    if state == "preempting":
        return f"Preempted by the smq queue: {reason}" if reason else "Preempted by the smq queue"
    if state == "cancelled":
        return f"Cancelled in the smq queue: {reason}" if reason else "Cancelled in the smq queue"
    return str(reason or f"The smq queue job is {state}")


def synthesized_description(
    job: Mapping[str, Any], request: Mapping[str, Any] | None, *, partition: str, region: str
) -> dict[str, Any]:
    """What DescribeTrainingJob would answer for the job's request before any attempt exists."""
    name = str(job["name"])
    request = request or {}
    description: dict[str, Any] = {k: copy.deepcopy(v) for k, v in request.items() if k not in _NOT_DESCRIBED}
    description.setdefault("ResourceConfig", _resource_config(job))
    account = _account_of(request.get("RoleArn")) or _account_of(job.get("owner")) or "000000000000"
    description.update(
        TrainingJobName=name,
        TrainingJobArn=f"arn:{partition}:sagemaker:{region}:{account}:training-job/{name.lower()}",
        CreationTime=parse_time(job.get("submitted_at")),
        LastModifiedTime=parse_time(job.get("updated_at")) or parse_time(job.get("submitted_at")),
        SecondaryStatusTransitions=[],
    )
    return description


def _resource_config(job: Mapping[str, Any]) -> dict[str, Any]:
    demand: Mapping[str, int] = job.get("demand") or {job["pool"]: job["instances"]}
    if len(demand) == 1:
        ((instance_type, count),) = demand.items()
        return {"InstanceType": instance_type, "InstanceCount": count}
    return {
        "InstanceGroups": [{"InstanceType": t, "InstanceCount": c, "InstanceGroupName": t} for t, c in demand.items()]
    }


def _account_of(arn: Any) -> str | None:
    parts = arn.split(":") if isinstance(arn, str) else []
    return parts[4] if len(parts) > 5 and parts[4].isdigit() else None
