"""The governance policy: one JSON document (an SSM parameter) that every rule reads.

Every key is optional; a missing key takes its default, and `{}` is a valid policy that requires no
tag, allows any instance type and role, sets no limit, and keeps the idle, spot and retry defaults:

    {
      "required_tags": ["project"],                  tag keys every job must carry (non-empty value)
      "allowed_instance_types": ["ml.g5.xlarge"],    empty: any
      "max_instance_count": 8,                       instances of one job, all groups together; null: none
      "max_runtime_seconds": 86400,                  StoppingCondition.MaxRuntimeInSeconds; null: none
      "allowed_role_arns": ["arn:aws:iam::123456789012:role/Training"],   empty: any
      "idle": {"threshold_percent": 1, "period_seconds": 300, "evaluation_periods": 3,
               "enforce_outside_queue": false},
      "spot_interruption_limit": 3,
      "retry": {"max_retries": 2, "min_training_seconds": 0, "retryable_reasons": []}
    }

The parser refuses anything else (an unknown key, a wrong type, a negative number, a regular
expression that does not compile) with a PolicyError naming the key path, so a typo is reported
instead of silently switching a rule off; the caller keeps the last good policy in force.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smq_lambda.errors import ConfigError
from smq_lambda.governance.values import is_int

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

TAG_KEY_MAX = 128
PERIOD_STEP_SECONDS = 60
"""SageMaker publishes training metrics once a minute, so shorter periods would find no data."""
SHORT_PERIOD_SECONDS = 3600
MAX_SHORT_WINDOW_SECONDS = 86_400
"""CloudWatch: periods under an hour may span at most a day of evaluation."""
MAX_WINDOW_SECONDS = 604_800
"""CloudWatch: any alarm may span at most seven days of evaluation."""


class PolicyError(ConfigError):
    """The policy document breaks a rule; `path` names the key (`policy.idle.period_seconds`)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class IdlePolicy:
    """When a training job counts as idle: every host at or below `threshold_percent` GPU utilization
    for `evaluation_periods` consecutive periods of `period_seconds` (defaults: 1 %, 3 x 5 minutes)."""

    threshold_percent: float = 1.0
    """SageMaker sums the GPUs of a host (0-400 % for 4 GPUs); the threshold applies to that sum."""
    period_seconds: int = 300
    evaluation_periods: int = 3
    enforce_outside_queue: bool = False
    """Also watch (and stop) training jobs the queue did not start."""


@dataclass(frozen=True)
class RetryPolicy:
    """Failed attempts re-queued when SageMaker's failure reason is the infrastructure's (see `retry`)."""

    max_retries: int = 2
    min_training_seconds: int = 0
    """Retry only attempts that trained at least this long (0: a capacity failure before training
    counts too)."""
    retryable_reasons: tuple[str, ...] = ()
    """Extra regular expressions (searched in FailureReason, case-insensitive) that mark a failure as
    the infrastructure's; checked before the built-in table."""


@dataclass(frozen=True)
class Policy:
    required_tags: tuple[str, ...] = ()
    allowed_instance_types: tuple[str, ...] = ()
    """Empty: any instance type."""
    max_instance_count: int | None = None
    max_runtime_seconds: int | None = None
    allowed_role_arns: tuple[str, ...] = ()
    """Empty: any role."""
    idle: IdlePolicy = field(default_factory=IdlePolicy)
    spot_interruption_limit: int = 3
    """A managed-spot attempt interrupted more often than this falls back to on-demand."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)


def parse_policy(value: object) -> Policy:
    """The Policy `value` (the decoded JSON document) describes. Raises PolicyError."""
    document = _object(value, "policy", Policy)
    return Policy(
        required_tags=_tag_keys(document.get("required_tags", []), "policy.required_tags"),
        allowed_instance_types=_strings(document.get("allowed_instance_types", []), "policy.allowed_instance_types"),
        max_instance_count=_optional_int(document.get("max_instance_count"), "policy.max_instance_count", minimum=1),
        max_runtime_seconds=_optional_int(document.get("max_runtime_seconds"), "policy.max_runtime_seconds", minimum=1),
        allowed_role_arns=_strings(document.get("allowed_role_arns", []), "policy.allowed_role_arns"),
        idle=_idle(document.get("idle", {})),
        spot_interruption_limit=_int(document.get("spot_interruption_limit", 3), "policy.spot_interruption_limit"),
        retry=_retry(document.get("retry", {})),
    )


def _idle(value: object) -> IdlePolicy:
    path = "policy.idle"
    document = _object(value, path, IdlePolicy)
    threshold = document.get("threshold_percent", 1.0)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise PolicyError(f"{path}.threshold_percent", f"must be a number, not {threshold!r}")
    if threshold < 0:
        raise PolicyError(f"{path}.threshold_percent", f"must not be negative, not {threshold}")
    period = _int(document.get("period_seconds", 300), f"{path}.period_seconds", minimum=PERIOD_STEP_SECONDS)
    if period % PERIOD_STEP_SECONDS:
        raise PolicyError(
            f"{path}.period_seconds",
            f"must be a multiple of {PERIOD_STEP_SECONDS} (SageMaker publishes GPUUtilization once a minute), "
            f"not {period}",
        )
    periods = _int(document.get("evaluation_periods", 3), f"{path}.evaluation_periods", minimum=1)
    window = MAX_SHORT_WINDOW_SECONDS if period < SHORT_PERIOD_SECONDS else MAX_WINDOW_SECONDS
    if period * periods > window:
        raise PolicyError(
            f"{path}.evaluation_periods",
            f"{periods} periods of {period} s span {period * periods} s; CloudWatch evaluates at most {window} s "
            f"for this period",
        )
    enforce = document.get("enforce_outside_queue", False)
    if not isinstance(enforce, bool):
        raise PolicyError(f"{path}.enforce_outside_queue", f"must be true or false, not {enforce!r}")
    return IdlePolicy(float(threshold), period, periods, enforce)


def _retry(value: object) -> RetryPolicy:
    path = "policy.retry"
    document = _object(value, path, RetryPolicy)
    reasons = _strings(document.get("retryable_reasons", []), f"{path}.retryable_reasons")
    for index, pattern in enumerate(reasons):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise PolicyError(
                f"{path}.retryable_reasons[{index}]", f"is not a valid regular expression: {exc}"
            ) from exc
    return RetryPolicy(
        max_retries=_int(document.get("max_retries", 2), f"{path}.max_retries"),
        min_training_seconds=_int(document.get("min_training_seconds", 0), f"{path}.min_training_seconds"),
        retryable_reasons=reasons,
    )


def _object(value: object, path: str, shape: type[DataclassInstance]) -> Mapping[str, Any]:
    """A JSON object with only the keys of the dataclass `shape`."""
    if not isinstance(value, Mapping):
        raise PolicyError(path, f"must be a JSON object, not {type(value).__name__}")
    known = shape.__dataclass_fields__.keys()
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        raise PolicyError(f"{path}.{unknown[0]}", f"is not a policy key (known: {', '.join(known)})")
    return value


def _int(value: object, path: str, *, minimum: int = 0) -> int:
    if not is_int(value):
        raise PolicyError(path, f"must be an integer, not {value!r}")
    if value < minimum:
        raise PolicyError(path, f"must be at least {minimum}, not {value}")
    return value


def _optional_int(value: object, path: str, *, minimum: int) -> int | None:
    return None if value is None else _int(value, path, minimum=minimum)


def _strings(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise PolicyError(path, f"must be a list of strings, not {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise PolicyError(f"{path}[{index}]", f"must be a non-empty string, not {item!r}")
    return tuple(value)


def _tag_keys(value: object, path: str) -> tuple[str, ...]:
    keys = _strings(value, path)
    for index, key in enumerate(keys):
        if len(key) > TAG_KEY_MAX:
            raise PolicyError(f"{path}[{index}]", f"a tag key has at most {TAG_KEY_MAX} characters, not {len(key)}")
    return keys
