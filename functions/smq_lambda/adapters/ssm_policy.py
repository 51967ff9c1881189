"""The governance policy from SSM, an operator's document (adapters/ssm_document.py).

A value that is missing, not JSON or breaks a rule of `governance.policy` is logged as an error
naming what is wrong and counted in the `InvalidPolicy` metric, once per distinct value read, and
the newest valid version of the parameter is in force instead, in a warm instance as in a cold one:
a typo in SSM never switches the guard off, nor tightens it by surprise. When no version is valid,
the policy the stack's parameters describe (`SMQ_STACK_POLICY`, the parameter's value as the stack
last set it) is in force; when that is not valid either, nothing is (ConfigError), never the
defaults, which would let through what the real policy refuses.

SSM throttled or unreachable keeps the policy in force (logged as a warning); only an instance that
has none yet raises ServiceUnavailable.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities import parameters

from smq_lambda.adapters.ssm_document import DocumentRules, SsmDocument
from smq_lambda.errors import ConfigError
from smq_lambda.governance.policy import Policy, PolicyError, parse_policy
from smq_lambda.settings import Settings

INVALID_POLICY_METRIC = "InvalidPolicy"
STACK_POLICY = "the stack's policy (SMQ_STACK_POLICY)"


def _policy(value: Any, source: str) -> Policy:
    try:
        return parse_policy(value)
    except PolicyError as exc:
        raise ConfigError(f"{source}: {exc}") from exc


class SsmPolicySource:
    """The PolicySource port over a powertools SSMProvider (built per cold start, with the
    handler's other clients). `stack_policy` is the JSON document the stack's parameters describe;
    None: there is none, and no valid version means no policy in force."""

    def __init__(self, parameter: str, provider: parameters.SSMProvider, stack_policy: str | None) -> None:
        self._stack_policy = stack_policy
        self._document = SsmDocument(
            parameter,
            provider,
            DocumentRules(
                what="governance policy",
                parse=_policy,
                metric=INVALID_POLICY_METRIC,
                last_resort=self._from_stack,
                last_resort_name=STACK_POLICY,
            ),
        )

    @classmethod
    def from_settings(cls, settings: Settings, provider: parameters.SSMProvider) -> SsmPolicySource | None:
        """The stack's policy source; None where the stack names no policy parameter."""
        if not settings.policy_parameter:
            return None
        return cls(settings.policy_parameter, provider, settings.stack_policy)

    def load(self) -> Policy:
        return self._document.load()

    def _from_stack(self) -> Policy:
        if self._stack_policy is None:
            raise ConfigError(f"{STACK_POLICY} is not set")
        try:
            return _policy(json.loads(self._stack_policy), STACK_POLICY)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, or nesting too deep
            raise ConfigError(f"{STACK_POLICY} is not valid JSON: {exc}") from exc
