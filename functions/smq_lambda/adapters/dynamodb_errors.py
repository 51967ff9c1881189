"""DynamoDB error codes that mean "not now", mapped to the queue's ServiceUnavailable.

A throttled or unreachable table changed nothing; callers may try again later. Every other code
is a defect of the deployment (a missing table, a missing permission) and is raised as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from smq_lambda.errors import ServiceUnavailable

SERVICE = "DynamoDB"
UNAVAILABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "ThrottlingException",
        "InternalServerError",
        "ServiceUnavailable",
    }
)


CONDITION_FAILED = "ConditionalCheckFailedException"


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code") or "Unknown")


def throttled(exc: ClientError) -> ServiceUnavailable | None:
    """The ServiceUnavailable that a ClientError means, or None when it means something else."""
    code = error_code(exc)
    if code in UNAVAILABLE_CODES:
        return ServiceUnavailable(SERVICE, code, str(exc.response.get("Error", {}).get("Message") or ""))
    return None


def unreachable(exc: BotoCoreError) -> ServiceUnavailable:
    """A timeout or a connection error: the call may not have reached DynamoDB."""
    return ServiceUnavailable(SERVICE, type(exc).__name__, str(exc))


@contextmanager
def unavailable_as_typed(also: Callable[[ClientError], ServiceUnavailable | None] = lambda exc: None) -> Iterator[None]:
    """Run DynamoDB calls with "not now" errors raised as ServiceUnavailable (`also` maps more
    codes the caller knows to mean the same); every other error is raised as it is."""
    try:
        yield
    except ClientError as exc:
        unavailable = throttled(exc) or also(exc)
        if unavailable is None:
            raise
        raise unavailable from exc
    except BotoCoreError as exc:
        raise unreachable(exc) from exc


def condition_failed(exc: ClientError) -> bool:
    return error_code(exc) == CONDITION_FAILED


def written(
    call: Callable[..., Any],
    *,
    also: Callable[[ClientError], ServiceUnavailable | None] = lambda exc: None,
    **request: Any,
) -> bool:
    """One conditional write (`call`: the client's put_item or update_item with `request`): True
    when it landed, False when its ConditionExpression did not hold (another writer got there
    first: never an error). "Not now" errors are raised as ServiceUnavailable (`unavailable_as_typed`)."""
    with unavailable_as_typed(also):
        try:
            call(**request)
        except ClientError as exc:
            if condition_failed(exc):
                return False
            raise
    return True
