"""Reading the loosely typed values governance works on: JSON policies, CreateTrainingJob requests,
DescribeTrainingJob answers and EventBridge details, which differ in small ways (tags as a list or a
map, times as datetimes or epoch milliseconds)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeGuard

from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.states import JobState

RUNNING_STATES = (JobState.STARTING, JobState.RUNNING)


def is_int(value: object) -> TypeGuard[int]:
    """JSON integers only: `true` and `2.0` are not counts."""
    return isinstance(value, int) and not isinstance(value, bool)


def tag_map(tags: object) -> dict[str, str]:
    """Tags as a map: a request's and ListTags' `[{"Key", "Value"}]`, or an event's `{key: value}`.
    Entries that are not string pairs are skipped: they cannot satisfy a required tag."""
    if isinstance(tags, Mapping):
        return {key: value for key, value in tags.items() if isinstance(key, str) and isinstance(value, str)}
    pairs: dict[str, str] = {}
    if isinstance(tags, list):
        for tag in tags:
            if isinstance(tag, Mapping) and isinstance(tag.get("Key"), str) and isinstance(tag.get("Value"), str):
                pairs[tag["Key"]] = tag["Value"]
    return pairs


def member(value: object, name: str) -> Any:
    """`value[name]` when `value` is a mapping that has it, else None."""
    return value.get(name) if isinstance(value, Mapping) else None


def moment(value: object) -> datetime | None:
    """A time as boto3 returns it (an aware datetime) or as an EventBridge detail carries it (epoch
    milliseconds, a number or a string of digits); None for anything else, out-of-range included."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not (is_int(value) or isinstance(value, float)):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


def reported_running_attempt(job: Job, description: Mapping[str, Any], status: str) -> Attempt | None:
    """`job`'s open attempt when `description` reports it in `status` while the job runs: what spot
    fallback and failure retry act on. None for any other report (late, early, another attempt's)."""
    attempt = job.current_attempt
    if attempt is None or not attempt.is_open or attempt.training_job_name != description.get("TrainingJobName"):
        return None
    if job.state not in RUNNING_STATES or description.get("TrainingJobStatus") != status:
        return None
    return attempt
