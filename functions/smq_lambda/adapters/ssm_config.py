"""Scheduler configuration: the configuration document (pools, teams, preemption and aging rules;
domain/config_document.py) from SSM, hot-reloaded, the rest from the settings.

The pools parameter is read through powertools Parameters with a 30-second cache, so an operator's
`aws ssm put-parameter` reaches every function within a minute without a redeploy, and a warm
function does not call SSM on every event.

A value that is not JSON or breaks a rule of the document is logged as an error naming what is
wrong (once per distinct value read), and the last good configuration stays in force: a typo in
SSM does not stop the queue. A source that has read no good configuration yet raises ConfigError,
as it does for a parameter that is missing or unreadable. SSM throttling or failing on its side, or
not answering at all, is ServiceUnavailable (it passes, and the API says 503).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from smq_lambda.domain.config_document import parse_config_document
from smq_lambda.errors import ConfigError, ServiceUnavailable, SmqError
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.settings import Settings

logger = Logger(service="smq", child=True)

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
        self._good: tuple[str, SchedulerConfig] | None = None
        """The last good value read and its configuration."""
        self._bad: str | None = None
        """The last malformed value read: each one is reported once, not at every load."""

    def load(self) -> SchedulerConfig:
        name = self._settings.pools_parameter
        try:
            raw = str(self._fetch(name, max_age=MAX_AGE_SECONDS))
        except GetParameterError as exc:
            raise read_failure(name, exc) from exc
        if self._good is not None and raw == self._good[0]:
            return self._good[1]
        try:
            config = self._parse(name, raw)
        except ConfigError as exc:
            if self._good is None:
                raise
            if raw != self._bad:
                self._bad = raw
                logger.error(
                    f"configuration document is invalid; the last good configuration stays in force: {exc}",
                    extra={"parameter": name, "problem": str(exc)},
                )
            return self._good[1]
        self._good, self._bad = (raw, config), None
        return config

    def _parse(self, name: str, raw: str) -> SchedulerConfig:
        source = f"SSM parameter {name}"
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, or nesting too deep
            raise ConfigError(f"{source} is not valid JSON: {exc}") from exc
        document = parse_config_document(value, source=source)
        return SchedulerConfig(
            pools=document.pools,
            unpooled=self._settings.unpooled,
            backfill=self._settings.backfill,
            teams=document.teams,
            preemption=document.preemption,
            aging=document.aging,
        )
