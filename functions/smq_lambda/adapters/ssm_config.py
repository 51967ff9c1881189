"""Scheduler configuration: the capacity pools from SSM (hot-reloaded), the rest from the settings.

The pools parameter is read through powertools Parameters with a 30-second cache, so an operator's
`aws ssm put-parameter` reaches every function within a minute without a redeploy, and a warm
function does not call SSM on every event.

A parameter that is missing, unreadable or malformed is a ConfigError; SSM throttling or failing on
its side, or not answering at all, is ServiceUnavailable (it passes, and the API says 503).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError, TransformParameterError
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from smq_lambda.domain.pools_document import parse_pools
from smq_lambda.errors import ConfigError, ServiceUnavailable, SmqError
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.settings import Settings

MAX_AGE_SECONDS = 30
SERVICE = "SSM"
UNAVAILABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "InternalServerError",
        "InternalFailure",
        "ServiceUnavailable",
    }
)
"""GetParameter error codes that pass: SSM throttled the call or failed on its side. Any other code
(ParameterNotFound, AccessDeniedException, ...) needs an operator."""


def read_failure(name: str, exc: GetParameterError) -> SmqError:
    """What a failed read means. powertools raises GetParameterError inside its handler of whatever
    the SSM call raised, so that error is the GetParameterError's context."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, (HTTPClientError, BotoConnectionError)):
        return ServiceUnavailable(SERVICE, type(cause).__name__, str(cause))
    if isinstance(cause, ClientError):
        error = cause.response.get("Error", {})
        code = str(error.get("Code") or "Unknown")
        if code in UNAVAILABLE_CODES:
            return ServiceUnavailable(SERVICE, code, str(error.get("Message") or ""))
    return ConfigError(f"SSM parameter {name} could not be read: {exc}")


class SsmConfigSource:
    """The ConfigSource port over a powertools SSMProvider, whose cache lives as long as the
    provider. Handlers build the provider with their other clients once per cold start, so its
    client always points where theirs do (a process-global default would outlive a local stack)."""

    def __init__(self, settings: Settings, provider: parameters.SSMProvider) -> None:
        self._settings = settings
        self._fetch: Callable[..., Any] = provider.get

    def load(self) -> SchedulerConfig:
        name = self._settings.pools_parameter
        try:
            value = self._fetch(name, transform="json", max_age=MAX_AGE_SECONDS)
        except TransformParameterError as exc:
            raise ConfigError(f"SSM parameter {name} is not valid JSON: {exc}") from exc
        except GetParameterError as exc:
            raise read_failure(name, exc) from exc
        return SchedulerConfig(
            pools=parse_pools(value, source=f"SSM parameter {name}"),
            unpooled=self._settings.unpooled,
            backfill=self._settings.backfill,
        )
