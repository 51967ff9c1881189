"""The governance policy from SSM, hot-reloaded like the pools (30-second powertools cache).

A document that is missing, not JSON or breaks a rule of `governance.policy` is logged as an error
naming what is wrong and counted in the `InvalidPolicy` metric, once per distinct value read, and
the last good policy stays in force: a typo in SSM never switches the guard off, nor tightens it by
surprise. A function instance that has read no good policy yet uses the defaults (`Policy()`).

SSM throttled or unreachable keeps the last good policy as well (logged as a warning); only an
instance that has none yet raises ServiceUnavailable, since the defaults could let through what the
real policy refuses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from smq_lambda.adapters.ssm_config import read_failure
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.governance.policy import Policy, PolicyError, parse_policy

logger = Logger(service="smq", child=True)

MAX_AGE_SECONDS = 30
NAMESPACE = "smq"
INVALID_POLICY_METRIC = "InvalidPolicy"


class SsmPolicySource:
    """The PolicySource port over a powertools SSMProvider (built per cold start, with the
    handler's other clients)."""

    def __init__(self, parameter: str, provider: parameters.SSMProvider) -> None:
        self._parameter = parameter
        self._fetch: Callable[..., Any] = provider.get
        self._good: Policy | None = None
        self._last_read: str | None = None
        """The last value read, good or not: each value is parsed, and a problem reported, once."""

    def load(self) -> Policy:
        try:
            raw = str(self._fetch(self._parameter, max_age=MAX_AGE_SECONDS))
        except GetParameterError as exc:
            failure = read_failure(self._parameter, exc)
            if isinstance(failure, ServiceUnavailable):
                if self._good is None:
                    raise failure from exc
                logger.warning(
                    "policy could not be read; the last good policy stays in force",
                    extra={"parameter": self._parameter, "error": str(failure)},
                )
                return self._good
            return self._read("", str(failure))
        return self._read(raw, None)

    def _read(self, raw: str, unreadable: str | None) -> Policy:
        key = raw if unreadable is None else f"unreadable: {unreadable}"
        if key != self._last_read:
            self._last_read = key
            problem = unreadable if unreadable is not None else self._parse(raw)
            if problem is not None:
                self._report(problem)
        return self._good or Policy()

    def _parse(self, raw: str) -> str | None:
        """Parse `raw` into the good policy; what is wrong with it when it is not one."""
        source = f"SSM parameter {self._parameter}"
        try:
            self._good = parse_policy(json.loads(raw))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, or nesting too deep
            return f"{source} is not valid JSON: {exc}"
        except PolicyError as exc:
            return f"{source}: {exc}"
        return None

    def _report(self, problem: str) -> None:
        in_force = "the last good policy" if self._good is not None else "the default policy"
        logger.error(
            f"governance policy is invalid; {in_force} stays in force until it is fixed",
            extra={"parameter": self._parameter, "problem": problem},
        )
        metric = EphemeralMetrics(namespace=NAMESPACE, service="smq")
        metric.add_metric(name=INVALID_POLICY_METRIC, unit=MetricUnit.Count, value=1)
        metric.flush_metrics()
