"""An operator's JSON document in an SSM parameter (the configuration, the governance policy, the
access rules), hot-reloaded, that fails closed.

The value is read through a powertools SSMProvider with a 30-second cache, so an operator's
`aws ssm put-parameter` reaches every function within a minute. A value that is not JSON, breaks a
rule of its document, or cannot be read (missing, access denied) is logged as an error naming what
is wrong and counted in the document's metric, once per distinct value read, and the newest version
of the parameter that is valid (GetParameterHistory) is in force instead. What is in force is then
a function of the parameter's history alone: a warm instance and a cold one enforce the same
document, the last one an operator wrote correctly, and a broken value never turns a rule off. When
no version is valid, the document's last resort is: a fixed, strict value, or none at all
(ConfigError), never an open default.

SSM throttled, failing on its side or not answering is ServiceUnavailable (it passes): the document
in force stays while there is one, and an instance with none raises.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from smq_lambda.errors import ConfigError, ServiceUnavailable, SmqError

logger = Logger(service="smq", child=True)

T = TypeVar("T")

MAX_AGE_SECONDS = 30
NAMESPACE = "smq"
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
"""SSM error codes that pass: SSM throttled the call or failed on its side. Any other code
(ParameterNotFound, AccessDeniedException, ...) needs an operator."""


def ssm_failure(name: str, cause: BaseException | None, exc: BaseException) -> SmqError:
    """What a failed read of parameter `name` means: ServiceUnavailable when it passes, else
    ConfigError. `cause` is what the SSM call raised, `exc` what reached us."""
    if isinstance(cause, (HTTPClientError, BotoConnectionError)):
        return ServiceUnavailable(SERVICE, type(cause).__name__, str(cause))
    if isinstance(cause, ClientError):
        error = cause.response.get("Error", {})
        code = str(error.get("Code") or "Unknown")
        if code in UNAVAILABLE_CODES:
            return ServiceUnavailable(SERVICE, code, str(error.get("Message") or ""))
    return ConfigError(f"SSM parameter {name} could not be read: {exc}")


def read_failure(name: str, exc: GetParameterError) -> SmqError:
    """What a failed powertools read means. powertools raises GetParameterError inside its handler
    of whatever the SSM call raised, so that error is the GetParameterError's context."""
    return ssm_failure(name, exc.__cause__ or exc.__context__, exc)


@dataclass(frozen=True)
class DocumentRules(Generic[T]):
    """What one kind of document is and what stands in for it when no version is valid."""

    what: str
    """How the log names the document ("governance policy")."""
    parse: Callable[[Any, str], T]
    """The document's value from its decoded JSON and the name of its source; ConfigError naming
    the key at fault when it is not one."""
    metric: str
    """Counted once per invalid value read (an ops alarm watches it)."""
    last_resort: Callable[[], T]
    """In force when no version of the parameter is valid; raises ConfigError when nothing may be."""
    last_resort_name: str
    """How the log names the last resort ("the stack's policy")."""


class SsmDocument(Generic[T]):
    """One parameter's document in force (see the module docstring). Built per cold start with the
    handler's other clients: the provider's cache and client live as long as it does."""

    def __init__(self, parameter: str, provider: parameters.SSMProvider, rules: DocumentRules[T]) -> None:
        self.parameter = parameter
        self._provider = provider
        self._rules = rules
        self._last: tuple[tuple[str, bool], T | ConfigError] | None = None
        """The last value read (or why none could be, flagged True) and what it put in force (or
        the ConfigError that nothing is): each value is resolved, and a problem reported, once."""
        self._in_force: T | None = None
        """The document in force, kept while SSM does not answer; None while none is."""

    def load(self) -> T:
        try:
            read = (str(self._provider.get(self.parameter, max_age=MAX_AGE_SECONDS)), False)
        except GetParameterError as exc:
            failure = read_failure(self.parameter, exc)
            if isinstance(failure, ServiceUnavailable):
                return self._kept(failure, exc)
            read = (str(failure), True)
        if self._last is None or self._last[0] != read:
            try:
                self._last = (read, self._resolve(*read))
            except ServiceUnavailable as exc:
                return self._kept(exc, exc.__cause__ or exc)
        outcome = self._last[1]
        if isinstance(outcome, ConfigError):
            self._in_force = None
            raise ConfigError(str(outcome))
        self._in_force = outcome
        return outcome

    def _kept(self, failure: ServiceUnavailable, cause: BaseException) -> T:
        if self._in_force is None:
            raise failure from cause
        logger.warning(
            f"{self._rules.what} could not be read; the one in force stays",
            extra={"parameter": self.parameter, "error": str(failure)},
        )
        return self._in_force

    @property
    def _source(self) -> str:
        return f"SSM parameter {self.parameter}"

    def _parse(self, raw: str) -> T:
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, or nesting too deep
            raise ConfigError(f"{self._source} is not valid JSON: {exc}") from exc
        return self._rules.parse(document, self._source)

    def _resolve(self, text: str, unreadable: bool) -> T | ConfigError:
        """What the value `text` (or, when `unreadable`, why none could be read) puts in force."""
        if not unreadable:
            try:
                return self._parse(text)
            except ConfigError as exc:
                text = str(exc)
        newest = self._newest_valid_version()
        if newest is not None:
            version, value = newest
            self._report(text, f"version {version} of the parameter, the newest valid one,")
            return value
        try:
            value = self._rules.last_resort()
        except ConfigError as exc:
            self._report(text, "nothing")
            return ConfigError(f"{text}; no version of it is valid, and {exc}")
        self._report(text, f"no version of it is valid, so {self._rules.last_resort_name}")
        return value

    def _newest_valid_version(self) -> tuple[int, T] | None:
        """The newest version of the parameter that parses, from its whole history (SSM keeps the
        last 100 versions). A history that cannot be read for a lasting reason has no valid version;
        one that passes raises ServiceUnavailable."""
        try:
            pages = self._provider.client.get_paginator("get_parameter_history").paginate(Name=self.parameter)
            versions = [(entry["Version"], entry["Value"]) for page in pages for entry in page["Parameters"]]
        except (ClientError, HTTPClientError, BotoConnectionError) as exc:
            self._history_unread(exc)
            return None
        for version, raw in sorted(versions, key=lambda entry: entry[0], reverse=True):
            try:
                return version, self._parse(str(raw))
            except ConfigError:
                continue
        return None

    def _history_unread(self, exc: Exception) -> None:
        """Raises ServiceUnavailable when the failure passes; logs one an operator must fix, except
        a missing parameter, which the parameter's own read reports."""
        failure = ssm_failure(self.parameter, exc, exc)
        if isinstance(failure, ServiceUnavailable):
            raise failure from exc
        if isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") == "ParameterNotFound":
            return
        logger.error(
            f"the history of the {self._rules.what} could not be read",
            extra={"parameter": self.parameter, "error": str(failure)},
        )

    def _report(self, problem: str, in_force: str) -> None:
        logger.error(
            f"{self._rules.what} is invalid; {in_force} is in force until it is fixed: {problem}",
            extra={"parameter": self.parameter, "problem": problem, "in_force": in_force},
        )
        metric = EphemeralMetrics(namespace=NAMESPACE, service="smq")
        metric.add_metric(name=self._rules.metric, unit=MetricUnit.Count, value=1)
        metric.flush_metrics()
