"""Facts about queue jobs and training requests that the session, TrainingQueue and the CLI share.

The API's job shape is plain JSON (see openapi.yaml); these helpers read it, and prepare requests
for it, without each entry point re-deriving the same rules.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

PRIORITY_TAG = "priority"
PREFERENCES_TAG = "smq:instance-preferences"
"""Instance types the job may run on, in order (`ml.p4d.24xlarge:2,ml.g5.48xlarge:4`): the queue
writes them as `ResourceConfig.InstancePreferences` when it accepts the request."""
MIN_PRIORITY = -1_000_000
MAX_PRIORITY = 1_000_000

ACTIVE_STATES = ("pending", "starting", "running", "preempting", "stopping")
LIVE_STATES = frozenset({"starting", "running", "preempting", "stopping"})
TERMINAL_STATES = ("completed", "failed", "cancelled")
ALL_STATES = ACTIVE_STATES + TERMINAL_STATES

SDK_HYPERPARAMETER_PREFIX = "sagemaker_"
"""Hyperparameters the SDK adds for its containers (`sagemaker_program`, `sagemaker_region`...)."""


def check_priority(priority: Any) -> int:
    """The API's priority rule, checked before a round trip: an integer in the allowed range."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ValueError(f"priority must be an integer, not {priority!r}")
    if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        raise ValueError(f"priority must be between {MIN_PRIORITY} and {MAX_PRIORITY}, not {priority}")
    return priority


def priority_of(request: Mapping[str, Any]) -> str | None:
    for tag in request.get("Tags") or ():
        if isinstance(tag, Mapping) and tag.get("Key") == PRIORITY_TAG:
            return str(tag.get("Value"))
    return None


def with_priority(request: Mapping[str, Any], priority: int | None, *, replace: bool) -> dict[str, Any]:
    """A copy of `request` carrying `priority` as its `priority` tag.

    `replace=False` keeps a priority tag the request already has: the estimator's own tag beats a
    session-wide default. The caller's request is never modified.
    """
    result = copy.deepcopy(dict(request))
    if priority is None:
        return result
    check_priority(priority)
    tags = [
        tag for tag in result.get("Tags") or () if not (isinstance(tag, Mapping) and tag.get("Key") == PRIORITY_TAG)
    ]
    if not replace and priority_of(result) is not None:
        return result
    tags.append({"Key": PRIORITY_TAG, "Value": str(priority)})
    result["Tags"] = tags
    return result


def with_preferences(request: Mapping[str, Any], preferences: list[str]) -> dict[str, Any]:
    """A copy of `request` whose preferences tag lists `preferences` (`TYPE[:COUNT]` entries, in
    order), replacing one it has; `request` itself (copied) for no preferences."""
    result = copy.deepcopy(dict(request))
    if not preferences:
        return result
    tags = [
        tag for tag in result.get("Tags") or () if not (isinstance(tag, Mapping) and tag.get("Key") == PREFERENCES_TAG)
    ]
    result["Tags"] = [*tags, {"Key": PREFERENCES_TAG, "Value": ",".join(preferences)}]
    return result


def preferences_text(job: Mapping[str, Any]) -> str | None:
    """`1. 2 × ml.p4d.24xlarge  2. 4 × ml.g5.48xlarge; selected: ml.g5.48xlarge × 4` for a flexible
    job (`selected: none yet` before its first start); None for any other job."""
    preferences = job.get("instance_preferences") or []
    if not preferences:
        return None
    listed = "  ".join(
        f"{number}. {preference['count']} × {preference['instance_type']}"
        for number, preference in enumerate(preferences, start=1)
    )
    selected = job.get("selected_instance_type")
    return f"{listed}; selected: " + (f"{selected} × {job.get('selected_instance_count')}" if selected else "none yet")


def decode_hyperparameter(value: Any) -> Any:
    """A hyperparameter as the training code sees it.

    The SDK JSON-encodes every value (`"\\"train.py\\""`, `"3"`); SageMaker's training toolkit
    decodes each with `json.loads` and keeps values that are not JSON as plain strings.
    """
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def decode_hyperparameters(hyperparameters: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: decode_hyperparameter(value) for key, value in (hyperparameters or {}).items()}


def user_hyperparameters(hyperparameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """Decoded hyperparameters without the SDK's own `sagemaker_*` entries."""
    return {
        key: value
        for key, value in decode_hyperparameters(hyperparameters).items()
        if not key.startswith(SDK_HYPERPARAMETER_PREFIX)
    }


def entry_point(request: Mapping[str, Any]) -> str | None:
    """The script an SDK framework estimator runs (`sagemaker_program`), decoded."""
    value = decode_hyperparameter((request.get("HyperParameters") or {}).get("sagemaker_program"))
    return str(value) if value else None


def parse_time(value: str | None) -> datetime | None:
    """An API time (`2024-05-01T12:00:00Z`, fractions allowed) as an aware UTC datetime."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def current_attempt(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    attempts = job.get("attempts") or []
    return attempts[-1] if attempts else None


def last_training_job_name(job: Mapping[str, Any]) -> str | None:
    """The SageMaker name of the latest attempt, live or ended; None before the first start."""
    attempt = current_attempt(job)
    return str(attempt["training_job_name"]) if attempt else job.get("training_job_name")


def live_training_job_name(job: Mapping[str, Any]) -> str | None:
    """The SageMaker name of the attempt that holds instances now, if any."""
    attempt = current_attempt(job)
    return str(attempt["training_job_name"]) if attempt and not attempt.get("ended_at") else None


def pools_text(job: Mapping[str, Any]) -> str:
    """`ml.p5.48xlarge`; `ml.p5.48xlarge + ml.c5.xlarge` for a heterogeneous job, which needs every one."""
    demand: Mapping[str, int] = job.get("demand") or {}
    return " + ".join(demand) if len(demand) > 1 else str(job["pool"])


def instances_text(job: Mapping[str, Any]) -> str:
    """`2` for one pool; `2 ml.p5.48xlarge + 1 ml.c5.xlarge` for heterogeneous jobs."""
    demand: Mapping[str, int] = job.get("demand") or {}
    if len(demand) > 1:
        return " + ".join(f"{count} {pool}" for pool, count in demand.items())
    return str(job.get("instances"))


def describe_age(start: datetime | None, now: datetime) -> str:
    """`3d4h`, `2h05m`, `4m12s`, `9s`: short enough for a table column."""
    if start is None:
        return "-"
    seconds = max(int((now - start).total_seconds()), 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{seconds:02d}s"
    return f"{seconds}s"


def state_since(job: Mapping[str, Any]) -> datetime | None:
    """When the job started waiting (submission or the end of its last attempt) or running (the
    current attempt's start); None for finished jobs."""
    state = job.get("state")
    attempt = current_attempt(job)
    if state == "pending":
        ended = parse_time(attempt.get("ended_at")) if attempt else None
        return ended or parse_time(job.get("submitted_at"))
    if state in LIVE_STATES:
        started = parse_time(attempt.get("started_at")) if attempt else None
        return started or parse_time(job.get("updated_at"))
    return None


def now_utc() -> datetime:
    return datetime.now(UTC)


def queued_message(job: Mapping[str, Any], request: Mapping[str, Any]) -> str:
    """What `fit(wait=False)` logs and `smq submit` prints: name, pool, position, what will run."""
    text = (
        f"Queued training job {job['name']} (priority {job.get('priority')}) in pool {job.get('pool')} "
        f"x{job.get('instances')}: {job.get('state')}"
    )
    if job.get("position"):
        text += f", position {job['position']}"
    cost = estimated_cost_text(job)
    if cost:
        text += f"; {cost}"
    script = entry_point(request)
    if script:
        text += f"; entry point {script}"
    hyperparameters = user_hyperparameters(request.get("HyperParameters"))
    if hyperparameters:
        text += "; hyperparameters " + ", ".join(f"{key}={value!r}" for key, value in hyperparameters.items())
    return text


def estimated_start(job: Mapping[str, Any]) -> tuple[datetime | None, str] | None:
    """When the queue expects a pending job to start (None: it cannot tell) and what it assumed;
    None when the job is not pending or the last scheduling pass did not estimate it."""
    estimate = job.get("estimated_start")
    if job.get("state") != "pending" or not isinstance(estimate, Mapping):
        return None
    return parse_time(estimate.get("at")), str(estimate.get("assumed") or "")


def estimated_cost_text(job: Mapping[str, Any]) -> str | None:
    """`est. $12.50` (from an expected duration), `at most $40.00` (MaxRuntimeInSeconds as a
    ceiling) or `unpriced`; None from a queue that does not estimate costs."""
    if "estimated_cost" not in job:
        return None
    estimate = job["estimated_cost"]
    if not isinstance(estimate, Mapping):
        return "unpriced"
    return f"{'at most' if estimate.get('ceiling') else 'est.'} {usd_text(float(estimate.get('usd') or 0.0))}"


def usd_text(usd: float | None) -> str:
    """`$1,234.56`; `<$0.01` for less than a cent that is not nothing; `unpriced` for None."""
    if usd is None:
        return "unpriced"
    if 0 < usd < 0.005:
        return "<$0.01"
    return f"${usd:,.2f}"
