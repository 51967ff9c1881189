"""Typed errors of the queue. Handlers map these classes to responses; nobody matches message text."""

from __future__ import annotations


class SmqError(Exception):
    """Base of every error the queue raises on purpose."""


class InvalidRequest(SmqError):
    """Input broke a rule; `field` names what to fix (dotted path), `None` when it is the whole body."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class PayloadTooLarge(InvalidRequest):
    """The body is larger than the API accepts."""


class JobNotFound(SmqError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no job named {name!r}")
        self.name = name


class NotOwner(SmqError):
    """The caller is neither the job's owner nor an admin principal."""

    def __init__(self, name: str, caller: str) -> None:
        super().__init__(f"{caller} may not change job {name!r}: only its owner or an admin may")
        self.name = name
        self.caller = caller


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


class ConfigError(SmqError):
    """The deployment's configuration (the pools parameter) is missing or malformed."""


class TrainingServiceError(SmqError):
    """A SageMaker call other than a start failed for a reason the queue cannot act on now (throttling,
    an outage). Nothing changed in the queue; the next pass or reconciliation tries again."""

    def __init__(self, operation: str, code: str, message: str) -> None:
        super().__init__(f"{operation} failed: {code}: {message}")
        self.operation = operation
        self.code = code
