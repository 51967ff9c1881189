"""The access rules port for API tests: rules a test sets, no SSM."""

from __future__ import annotations

from smq_lambda.domain.access.access import UNRESTRICTED, AccessRules


class StaticAccessRules:
    """`rules` is what every load returns; tests replace it."""

    def __init__(self, rules: AccessRules = UNRESTRICTED) -> None:
        self.rules = rules

    def load(self) -> AccessRules:
        return self.rules
