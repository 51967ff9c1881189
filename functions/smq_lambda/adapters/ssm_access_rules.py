"""The access rules from SSM, an operator's document (adapters/ssm_document.py).

A document that is missing, not JSON or breaks a rule is logged as an error naming what is wrong
and counted in `InvalidAccessRules`, once per distinct value read, and the newest valid version of
the parameter is in force instead. When no version is valid, the fallback rules are
(domain/access.FALLBACK: nobody but an admin above the default priority), the strictest rules, not
the stack's first document. Either way what is in force depends on the parameter's history alone,
so what a caller may do never depends on which function instance answers. SSM throttled or
unreachable is ServiceUnavailable until rules are in force, which then stay.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities import parameters

from smq_lambda.adapters.ssm_document import DocumentRules, SsmDocument
from smq_lambda.domain.access.access import FALLBACK, AccessRules, parse_access_rules

INVALID_ACCESS_RULES_METRIC = "InvalidAccessRules"


class SsmAccessRules:
    """The AccessRulesSource port over a powertools SSMProvider (built per cold start, with the
    handler's other clients)."""

    def __init__(self, parameter: str, provider: parameters.SSMProvider) -> None:
        self._document = SsmDocument(
            parameter,
            provider,
            DocumentRules(
                what="access rules document",
                parse=lambda value, source: parse_access_rules(value, source=source),
                metric=INVALID_ACCESS_RULES_METRIC,
                last_resort=lambda: FALLBACK,
                last_resort_name="the fallback rules (nobody but an admin above the default priority)",
            ),
        )

    def load(self) -> AccessRules:
        return self._document.load()
