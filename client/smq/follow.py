"""Following a queue job to its end, as `fit()` and `train()` follow a training job: the queue's
changes, SageMaker's status of the live attempt, and every attempt's CloudWatch logs.

SDK-neutral: the SDK sessions (`smq.session` for v2, `smq.model_trainer` for v3) decide what
following returns and raises; here is only what a wait prints and when it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import botocore.exceptions

from smq.api_client import SmqApiClient
from smq.jobs import TERMINAL_STATES, current_attempt, estimated_cost_text, estimated_start, now_utc
from smq.logs import AttemptLogs
from smq.sdk_helpers import ColorWrap, secondary_training_status_changed, secondary_training_status_message
from smq.start_estimates import start_phrase

NOT_FOUND_CODES = frozenset({"ValidationException", "ResourceNotFound", "ResourceNotFoundException"})
"""What DescribeTrainingJob says about a name SageMaker does not know (yet)."""

DescribeAttempt = Callable[[str], "dict[str, Any] | None"]
"""An attempt's DescribeTrainingJob answer by its SageMaker name; None while it does not exist."""


def describe_attempt(sagemaker_client: Any, training_job_name: str) -> dict[str, Any] | None:
    """The attempt as SageMaker describes it; None while the queue is still creating it."""
    try:
        return dict(sagemaker_client.describe_training_job(TrainingJobName=training_job_name))
    except botocore.exceptions.ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in NOT_FOUND_CODES:
            return None
        raise


def attempt_descriptions(describe: DescribeAttempt, job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every attempt of the job that SageMaker can describe, oldest first."""
    found = (describe(str(a["training_job_name"])) for a in job.get("attempts") or ())
    return [description for description in found if description is not None]


class JobFollower:
    """One wait on one queue job: remembers what it reported, so each change is said once.

    Args:
        api: the queue's API.
        name: the queue job.
        describe: how to ask SageMaker about an attempt (the SDK session's client).
        logs_client: a CloudWatch Logs client to tail attempts with; None reports no log lines.
        poll_interval: seconds between looks at the queue.
        sleep: how to wait between looks (tests move the queue on from it).
    """

    def __init__(
        self,
        api: SmqApiClient,
        name: str,
        describe: DescribeAttempt,
        logs_client: Any | None,
        *,
        poll_interval: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._api = api
        self._name = name
        self._describe = describe
        self._logs_client = logs_client
        self._poll_interval = poll_interval
        self._sleep = sleep
        self._previous: Mapping[str, Any] | None = None
        self._descriptions: dict[str, dict[str, Any]] = {}
        self._tails: dict[str, AttemptLogs] = {}
        self._done: set[str] = set()
        self._ended_once: set[str] = set()
        self._color = ColorWrap()

    def follow(self, timeout: float | None = None) -> tuple[dict[str, Any], bool]:
        """Block until the job finishes or `timeout` seconds pass, reporting as it goes; returns
        the last look at the job and whether it finished."""
        deadline = time.monotonic() + timeout if timeout else None
        while True:
            job = self._api.get_job(self._name)
            if job["state"] in TERMINAL_STATES:
                break
            self.report(job)
            if deadline is not None and time.monotonic() > deadline:
                return job, False
            self._sleep(self._poll_interval)
        if self._logs_client is not None:
            self._sleep(self._poll_interval)  # CloudWatch gets the last lines a little after the end
        self.report(job, final=True)
        return job, True

    def report(self, job: Mapping[str, Any], *, final: bool = False) -> None:
        """Say what happened since the last look, in the order it happened: the new log lines of
        attempts already known, the queue's changes, SageMaker's status of the live attempt, then
        the first lines of attempts that just started. `final`: the job has finished."""
        known = {str(a["training_job_name"]) for a in (self._previous or {}).get("attempts") or ()}
        self.flush_logs(job, only=known)
        for line in queue_changes(self._previous, job):
            print(f"{now_utc():%Y-%m-%d %H:%M:%S} Queue - {line}", flush=True)
        self._previous = job
        if not final:
            self._report_attempt_status(job)
        self.flush_logs(job)
        self._retire_read_attempts(job, final=final)

    def flush_logs(self, job: Mapping[str, Any], only: set[str] | None = None) -> None:
        """Print the new log lines of every attempt still read (or those named in `only`), oldest
        attempt first."""
        if self._logs_client is None:
            return
        instances = sum((job.get("demand") or {}).values()) or int(job.get("instances") or 1)
        for attempt in job.get("attempts") or ():
            training_job_name = str(attempt["training_job_name"])
            if training_job_name in self._done or (only is not None and training_job_name not in only):
                continue
            tail = self._tails.get(training_job_name)
            if tail is None:
                tail = self._tails[training_job_name] = AttemptLogs(
                    self._logs_client, training_job_name, instances, self._color
                )
            tail.flush()

    def _report_attempt_status(self, job: Mapping[str, Any]) -> None:
        """SageMaker's own secondary status messages for the live attempt, as the SDK prints them."""
        attempt = current_attempt(job)
        if attempt is None or attempt.get("ended_at"):
            return
        training_job_name = str(attempt["training_job_name"])
        description = self._describe(training_job_name)
        if description is None:
            return
        previous = self._descriptions.get(training_job_name)
        if secondary_training_status_changed(description, previous):
            print(secondary_training_status_message(description, previous), flush=True)
            self._descriptions[training_job_name] = description

    def _retire_read_attempts(self, job: Mapping[str, Any], *, final: bool) -> None:
        """Stop reading an attempt one look after it ended: CloudWatch delivers the last lines a
        little after SageMaker reports the end."""
        for attempt in job.get("attempts") or ():
            training_job_name = str(attempt["training_job_name"])
            if final or training_job_name in self._ended_once:
                self._done.add(training_job_name)
            elif attempt.get("ended_at"):
                self._ended_once.add(training_job_name)


def queue_changes(previous: Mapping[str, Any] | None, job: Mapping[str, Any]) -> list[str]:
    """What changed in the queue job since the last look, in words (nothing when nothing did).

    Attempts are reported even when a look falls between two states (a job seen pending and then
    running still gets its "starting attempt" line).
    """
    lines = [] if previous is None else _attempt_changes(previous, job)
    if previous is not None and previous["state"] == job["state"]:
        return lines + _position_change(previous, job)
    return lines + _state_line(previous, job)


def _attempt_changes(previous: Mapping[str, Any], job: Mapping[str, Any]) -> list[str]:
    """Attempts that started or ended since the last look (the end of the last attempt of a
    finished job is said by the job's own line)."""
    name, state = job["name"], job["state"]
    before = {a["number"]: a for a in previous.get("attempts") or ()}
    lines: list[str] = []
    for each in job.get("attempts") or ():
        old = before.get(each["number"])
        if old is None:
            lines.append(
                f"starting attempt {each['number']} of {name} as SageMaker training job {each['training_job_name']}"
            )
        elif old.get("ended_at") is None and each.get("ended_at") and state not in TERMINAL_STATES:
            why = f" ({each['reason']})" if each.get("reason") else ""
            lines.append(f"attempt {each['number']} of {name} ended: {each.get('outcome')}{why}")
    return lines


def _position_change(previous: Mapping[str, Any], job: Mapping[str, Any]) -> list[str]:
    moved = (previous.get("position"), previous.get("reason")) != (job.get("position"), job.get("reason"))
    newly_estimated = _estimate(previous) is None and _estimate(job) is not None
    if job["state"] != "pending" or not (moved or newly_estimated):
        return []
    return [
        f"{job['name']} is at position {job.get('position')} in {job['pool']}{_reason(job)}{_starts(job)}{_cost(job)}"
    ]


def _state_line(previous: Mapping[str, Any] | None, job: Mapping[str, Any]) -> list[str]:
    """The job's new state, in words."""
    name, state = job["name"], job["state"]
    attempt = current_attempt(job)
    number = attempt["number"] if attempt else None
    reason = _reason(job)
    if state == "pending":
        again = "back in the queue" if previous is not None and attempt else "pending"
        where = f"at position {job.get('position')} in {job['pool']}"
        return [f"{name} is {again} {where}{reason}{_starts(job)}{_cost(job)}"]
    if state == "starting" and previous is None:
        return [f"starting attempt {number} of {name} as SageMaker training job {job.get('training_job_name')}"]
    if state == "running":
        return [f"attempt {number} of {name} is running as {job.get('training_job_name')}"]
    if state == "preempting":
        return [f"attempt {number} of {name} is being preempted{reason}"]
    if state == "stopping":
        return [f"{name} is being cancelled: stopping attempt {number}{reason}"]
    if state in TERMINAL_STATES:
        redundant = str(job.get("reason") or "").lower() == state
        return [f"{name} {state}{'' if redundant else reason}"]
    return []


def _reason(job: Mapping[str, Any]) -> str:
    return f": {job['reason']}" if job.get("reason") else ""


def _estimate(job: Mapping[str, Any]) -> datetime | None:
    """When the queue expects the pending job to start, if it can tell."""
    estimate = estimated_start(job)
    return estimate[0] if estimate is not None else None


def _starts(job: Mapping[str, Any]) -> str:
    """`; estimated start in 3–7 min` when the queue can tell (see start_estimates.py)."""
    phrase = start_phrase(job["estimated_start"], now_utc()) if estimated_start(job) is not None else None
    return f"; estimated start {phrase}" if phrase is not None else ""


def _cost(job: Mapping[str, Any]) -> str:
    """`; est. $12.50` (or `; at most $40.00`, `; unpriced`) when the queue estimates costs."""
    text = estimated_cost_text(job)
    return f"; {text}" if text else ""


def billing_lines(descriptions: list[dict[str, Any]], job: Mapping[str, Any]) -> list[str]:
    """The SDK's closing lines, summed over every attempt the job needed."""
    training = [d["TrainingTimeInSeconds"] for d in descriptions if d.get("TrainingTimeInSeconds") is not None]
    billable = [d["BillableTimeInSeconds"] for d in descriptions if d.get("BillableTimeInSeconds") is not None]
    instances = int(job.get("instances") or 1)
    lines = []
    if training:
        lines.append(f"Training seconds: {sum(training) * instances}")
    if billable:
        lines.append(f"Billable seconds: {sum(billable) * instances}")
    if len(job.get("attempts") or ()) > 1:
        lines.append(f"Attempts: {len(job['attempts'])}")
    return lines
