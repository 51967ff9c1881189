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
               "enforce_outside_queue": false,
               "warn_below_percent": null, "warn_evaluation_periods": 12,
               "cpu_threshold_percent": null, "exempt_principals": []},
      "spot_interruption_limit": 3,
      "retry": {"max_retries": 2, "min_training_seconds": 0, "retryable_reasons": []}
    }

The parser refuses anything else (an unknown key, a wrong type, a negative number, a regular
expression that does not compile) with a PolicyError naming the key path, so a typo is reported
instead of silently switching a rule off; the caller keeps the newest valid policy in force.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smq_lambda.domain.access.principals import pattern_problem
from smq_lambda.domain.config.bounds import MAX_COUNT, MAX_INSTANCES, MAX_SECONDS
from smq_lambda.errors import ConfigError
from smq_lambda.governance.untyped_fields import is_int

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

TAG_KEY_MAX = 128
PERIOD_STEP_SECONDS = 60
"""SageMaker publishes training metrics once a minute, so shorter periods would find no data."""
SHORT_PERIOD_SECONDS = 3600
MAX_SHORT_SPAN_SECONDS = 86_400
"""CloudWatch: periods under an hour may span at most a day of evaluation (an alarm's span: its
periods times their length; not a training plan's window)."""
MAX_SPAN_SECONDS = 604_800
"""CloudWatch: any alarm may span at most seven days of evaluation."""
MAX_CPU_PERCENT = 19_200
"""SageMaker sums a host's vCPUs (100 % each); no CPU training instance has more than 192."""
MAX_GPU_PERCENT = 1600
"""SageMaker sums a host's GPUs (100 % each); no training instance has more than 16."""


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
    warn_below_percent: float | None = None
    """Warn the owner of a queued job, never stop it, when every host stays below this GPU
    utilization for `warn_evaluation_periods` periods; None (the default): no warning."""
    warn_evaluation_periods: int = 12
    """The warning's span in periods of `period_seconds`, longer than the stop rule's (1 hour by
    default), so a job is warned of low use well before, and apart from, an idle stop."""
    cpu_threshold_percent: float | None = None
    """Watch jobs on instances without GPUs (governance/idle.py) on their `CPUUtilization`, summed
    over a host's vCPUs, with the same periods; None (the default): they are not watched."""
    exempt_principals: tuple[str, ...] = ()
    """Principal patterns (domain/access/principals.py) that may submit a job tagged `smq:idle-exempt`
    (never stopped as idle: an interactive debugging job looks idle); empty: nobody may."""


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
        max_instance_count=_optional_int(
            document.get("max_instance_count"), "policy.max_instance_count", minimum=1, maximum=MAX_INSTANCES
        ),
        max_runtime_seconds=_optional_int(
            document.get("max_runtime_seconds"), "policy.max_runtime_seconds", minimum=1, maximum=MAX_SECONDS
        ),
        allowed_role_arns=_strings(document.get("allowed_role_arns", []), "policy.allowed_role_arns"),
        idle=_idle(document.get("idle", {})),
        spot_interruption_limit=_int(document.get("spot_interruption_limit", 3), "policy.spot_interruption_limit"),
        retry=_retry(document.get("retry", {})),
    )


def _idle(value: object) -> IdlePolicy:
    path = "policy.idle"
    document = _object(value, path, IdlePolicy)
    threshold = document.get("threshold_percent", 1.0)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise PolicyError(f"{path}.threshold_percent", f"must be a number, not {threshold!r}")
    if not 0 <= threshold <= MAX_GPU_PERCENT:  # also refuses NaN, infinities and ints too large for a float
        raise PolicyError(f"{path}.threshold_percent", f"must be from 0 to {MAX_GPU_PERCENT}, not {threshold}")
    period = _int(document.get("period_seconds", 300), f"{path}.period_seconds", minimum=PERIOD_STEP_SECONDS)
    if period % PERIOD_STEP_SECONDS:
        raise PolicyError(
            f"{path}.period_seconds",
            f"must be a multiple of {PERIOD_STEP_SECONDS} (SageMaker publishes GPUUtilization once a minute), "
            f"not {period}",
        )
    periods = _int(document.get("evaluation_periods", 3), f"{path}.evaluation_periods", minimum=1)
    span = MAX_SHORT_SPAN_SECONDS if period < SHORT_PERIOD_SECONDS else MAX_SPAN_SECONDS
    if period * periods > span:
        raise PolicyError(
            f"{path}.evaluation_periods",
            f"{periods} periods of {period} s span {period * periods} s; CloudWatch evaluates at most {span} s "
            f"for this period",
        )
    enforce = document.get("enforce_outside_queue", False)
    if not isinstance(enforce, bool):
        raise PolicyError(f"{path}.enforce_outside_queue", f"must be true or false, not {enforce!r}")
    warn, warn_periods = _warning(document, path, float(threshold), period, periods)
    return IdlePolicy(
        float(threshold),
        period,
        periods,
        enforce,
        warn_below_percent=warn,
        warn_evaluation_periods=warn_periods,
        cpu_threshold_percent=_cpu_threshold(document.get("cpu_threshold_percent"), f"{path}.cpu_threshold_percent"),
        exempt_principals=_principals(document.get("exempt_principals", []), f"{path}.exempt_principals"),
    )


def _cpu_threshold(value: object, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(path, f"must be a number or null, not {value!r}")
    if not 0 <= value <= MAX_CPU_PERCENT:
        raise PolicyError(path, f"must be from 0 to {MAX_CPU_PERCENT}, not {value}")
    return float(value)


def _principals(value: object, path: str) -> tuple[str, ...]:
    patterns = _strings(value, path)
    for index, pattern in enumerate(patterns):
        problem = pattern_problem(pattern)
        if problem is not None:
            raise PolicyError(f"{path}[{index}]", problem)
    return patterns


def _warning(
    document: Mapping[str, Any], path: str, threshold: float, period: int, periods: int
) -> tuple[float | None, int]:
    """The low-utilization warning's threshold and span: above the idle threshold (at or below it
    the idle stop comes first), within what SageMaker can report, over a longer span than the
    stop rule's and one CloudWatch can evaluate."""
    warn = document.get("warn_below_percent")
    warn_periods = _int(
        document.get("warn_evaluation_periods", IdlePolicy.warn_evaluation_periods),
        f"{path}.warn_evaluation_periods",
        minimum=1,
    )
    if warn is None:
        return None, warn_periods
    if isinstance(warn, bool) or not isinstance(warn, int | float):
        raise PolicyError(f"{path}.warn_below_percent", f"must be a number or null, not {warn!r}")
    if not threshold < warn <= MAX_GPU_PERCENT:  # also refuses NaN, infinities and ints too large for a float
        raise PolicyError(
            f"{path}.warn_below_percent",
            f"must be above threshold_percent ({threshold:g}) and at most {MAX_GPU_PERCENT}, not {warn}",
        )
    if warn_periods <= periods:
        raise PolicyError(
            f"{path}.warn_evaluation_periods",
            f"must be more than evaluation_periods ({periods}): the warning watches a longer span, not {warn_periods}",
        )
    span = MAX_SHORT_SPAN_SECONDS if period < SHORT_PERIOD_SECONDS else MAX_SPAN_SECONDS
    if period * warn_periods > span:
        raise PolicyError(
            f"{path}.warn_evaluation_periods",
            f"{warn_periods} periods of {period} s span {period * warn_periods} s; CloudWatch evaluates at most "
            f"{span} s for this period",
        )
    return float(warn), warn_periods


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
        min_training_seconds=_int(
            document.get("min_training_seconds", 0), f"{path}.min_training_seconds", maximum=MAX_SECONDS
        ),
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


def _int(value: object, path: str, *, minimum: int = 0, maximum: int = MAX_COUNT) -> int:
    if not is_int(value):
        raise PolicyError(path, f"must be an integer, not {value!r}")
    if value < minimum:
        raise PolicyError(path, f"must be at least {minimum}, not {value}")
    if value > maximum:
        raise PolicyError(path, f"must be at most {maximum}, not {value}")
    return value


def _optional_int(value: object, path: str, *, minimum: int, maximum: int) -> int | None:
    return None if value is None else _int(value, path, minimum=minimum, maximum=maximum)


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
