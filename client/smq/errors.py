"""Errors the smq client raises on purpose.

API refusals become one class per HTTP status, so callers (and the CLI's exit codes) branch on the
class and never on message text. Each carries the API's own `message` and `field`.
"""

from __future__ import annotations


class SmqError(Exception):
    """Base of every error the smq client raises on purpose."""


class ApiUrlNotFound(SmqError):
    """No API URL: none given, no `SMQ_API_URL`, and no stack output to read it from."""


class ApiUnreachable(SmqError):
    """The API could not be reached at all (connection refused, DNS, timeout)."""


class SmqApiError(SmqError):
    """The API answered with an error status. `message` and `field` are the API's own words."""

    status: int = 0

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(f"{message} (field: {field})" if field else message)
        self.status = status
        self.message = message
        self.field = field


class InvalidRequest(SmqApiError):
    """400: the input broke a rule and nothing was changed."""


class AccessDenied(SmqApiError):
    """403: not the job's owner nor an admin, or IAM refused the call."""


class JobNotFound(SmqApiError):
    """404: no job of that name."""


class JobConflict(SmqApiError):
    """409: a job of that name is not finished yet (add), or the job is already finished."""


class PayloadTooLarge(SmqApiError):
    """413: the request body is over the API's limit."""


ERRORS_BY_STATUS: dict[int, type[SmqApiError]] = {
    400: InvalidRequest,
    403: AccessDenied,
    404: JobNotFound,
    409: JobConflict,
    413: PayloadTooLarge,
}


def api_error(status: int, message: str, field: str | None = None) -> SmqApiError:
    """The typed error for an HTTP status; other statuses (429, 5xx) are plain `SmqApiError`."""
    return ERRORS_BY_STATUS.get(status, SmqApiError)(status, message, field)
