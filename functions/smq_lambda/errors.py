"""Typed errors of the queue. Handlers map these classes to responses; nobody matches message text."""

from __future__ import annotations

from collections.abc import Sequence


class SmqError(Exception):
    """Base of every error the queue raises on purpose."""


class InvalidRequest(SmqError):
    """Input broke a rule; `field` names what to fix (dotted path), `None` when it is the whole body."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class PolicyViolation(InvalidRequest):
    """The request breaks the governance policy (tags and limits), in every way listed at once, so
    one round trip fixes them all. `violations` are (field, rule, message) triples, in the policy's
    order; `field` is the first one's."""

    def __init__(self, violations: Sequence[tuple[str, str, str]]) -> None:
        if not violations:
            raise ValueError("a policy violation names at least one broken rule")
        messages = "; ".join(message for _, _, message in violations)
        super().__init__(violations[0][0], f"the request breaks the queue's policy: {messages}")
        self.violations = tuple(violations)


class PayloadTooLarge(InvalidRequest):
    """The body is larger than the API accepts."""


class JobNotFound(SmqError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no job named {name!r}")
        self.name = name


class NotOwner(SmqError):
    """The caller is neither the job's owner nor an admin principal."""

    def __init__(self, name: str, caller: str, *, action: str = "change job") -> None:
        super().__init__(f"{caller} may not {action} {name!r}: only its owner or an admin may")
        self.name = name
        self.caller = caller


class AccessDenied(SmqError):
    """An access rule forbids what the caller asked for: a priority above its cap, or a role it may
    not pass. `rule` names the rule, `field` the part of the request that broke it."""

    def __init__(self, field: str, rule: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.rule = rule
        self.message = message


class JobConflict(SmqError):
    """The request contradicts the job's current state (duplicate unfinished name, finished job)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


class VersionConflict(SmqError):
    """A conditional write lost: someone else changed the job first. Reload and decide again."""

    def __init__(self, name: str) -> None:
        super().__init__(f"job {name!r} changed concurrently")
        self.name = name


class StartRefused(SmqError):
    """SageMaker refused to create an attempt. `lasting` refusals fail the job; others are retried."""

    def __init__(self, reason: str, *, lasting: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.lasting = lasting


class StartOutcomeUnknown(SmqError):
    """CreateTrainingJob did not answer (a read timeout, a dropped connection): SageMaker may have
    created the attempt. The attempt stays open, and DescribeTrainingJob (reconciliation) decides."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ServiceUnavailable(SmqError):
    """An AWS service throttled the queue or could not be reached. Nothing changed; the caller may
    retry after `retry_after_seconds` (the API answers 503 with `Retry-After`)."""

    def __init__(self, service: str, code: str, message: str, *, retry_after_seconds: int = 5) -> None:
        super().__init__(f"{service} is unavailable ({code}): {message}")
        self.service = service
        self.code = code
        self.retry_after_seconds = retry_after_seconds


class CostDimensionsPending(SmqError):
    """The cost records counted an attempt under its team and owner but could not write some of its
    tag dimensions now (the cause: a throttled write if one was, else the first failure): they stay
    pending on the attempt, and its next record writes them. `recorded`: this call counted the attempt, so its spend is new."""

    def __init__(self, training_job_name: str, dimensions: Sequence[str], *, recorded: bool) -> None:
        super().__init__(f"the cost of {training_job_name} is recorded, not yet under {', '.join(dimensions)}")
        self.training_job_name = training_job_name
        self.dimensions = tuple(dimensions)
        self.recorded = recorded


class ConfigError(SmqError):
    """The deployment's configuration (the pools parameter) is missing or malformed."""


class TrainingServiceError(SmqError):
    """A SageMaker call other than a start failed for a reason the queue cannot act on now (throttling,
    an outage). Nothing changed in the queue; the next pass or reconciliation tries again."""

    def __init__(self, operation: str, code: str, message: str) -> None:
        super().__init__(f"{operation} failed: {code}: {message}")
        self.operation = operation
        self.code = code


class AlarmServiceError(SmqError):
    """A CloudWatch alarm call failed (throttling, an outage, a refused request). Idle alarms are
    best-effort: the caller logs it, and the next report or reconciliation tries again."""

    def __init__(self, operation: str, code: str, message: str) -> None:
        super().__init__(f"{operation} failed: {code}: {message}")
        self.operation = operation
        self.code = code
