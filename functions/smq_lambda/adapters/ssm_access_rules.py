"""The access rules from SSM, hot-reloaded like the pools (30-second powertools cache).

A document that is missing, not JSON or breaks a rule puts the fallback rules in force
(domain/access.FALLBACK: nobody but an admin above the default priority) and is logged as an error,
once per distinct value, naming what is wrong. The fallback is the same in every function instance,
warm or cold, so what a caller may do never depends on which instance answers. SSM throttled or
unreachable is ServiceUnavailable instead: the rules are probably fine, the caller should retry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from smq_lambda.adapters.ssm_config import read_failure
from smq_lambda.domain.access import FALLBACK, AccessRules, parse_access_rules
from smq_lambda.errors import ConfigError, ServiceUnavailable

logger = Logger(service="smq", child=True)

MAX_AGE_SECONDS = 30


class SsmAccessRules:
    """The AccessRulesSource port over a powertools SSMProvider (built per cold start, with the
    handler's other clients)."""

    def __init__(self, parameter: str, provider: parameters.SSMProvider) -> None:
        self._parameter = parameter
        self._fetch: Callable[..., Any] = provider.get
        self._last: tuple[tuple[str, str | None], AccessRules] | None = None
        """What the last load read (value or why none) and the rules it gave: each value is parsed,
        and a problem logged, once."""

    def load(self) -> AccessRules:
        try:
            raw = str(self._fetch(self._parameter, max_age=MAX_AGE_SECONDS))
        except GetParameterError as exc:
            failure = read_failure(self._parameter, exc)
            if isinstance(failure, ServiceUnavailable):
                raise failure from exc
            return self._remembered("", str(failure))
        return self._remembered(raw, None)

    def _remembered(self, raw: str, unreadable: str | None) -> AccessRules:
        read = (raw, unreadable)
        if self._last is None or self._last[0] != read:
            self._last = (read, self._rules(raw) if unreadable is None else self._fallback(unreadable))
        return self._last[1]

    def _rules(self, raw: str) -> AccessRules:
        source = f"SSM parameter {self._parameter}"
        try:
            return parse_access_rules(json.loads(raw), source=source)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, or nesting too deep
            return self._fallback(f"{source} is not valid JSON: {exc}")
        except ConfigError as exc:
            return self._fallback(str(exc))

    def _fallback(self, problem: str) -> AccessRules:
        logger.error(
            "access rules are invalid; the fallback rules are in force until they are fixed",
            extra={"parameter": self._parameter, "problem": problem},
        )
        return FALLBACK
