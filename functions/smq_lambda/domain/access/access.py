"""Who may do what: admin principals, and per-principal rules on priorities and roles.

Operators write the rules as one JSON document (the stack's `AccessRules` parameter, kept in SSM):

    {
      "rules": [
        {"name": "research-leads",
         "principals": ["arn:aws:iam::111122223333:role/ResearchLead"],
         "max_priority": 1000,
         "role_arns": ["arn:aws:iam::111122223333:role/SageMaker-Research*"],
         "owner": "role"}
      ],
      "default": {"max_priority": 100}
    }

A caller gets the first rule, in order, with a principal pattern that matches it (see
domain/access/principals.py for patterns), or the `default` rule. A rule caps the priority the caller may
submit at or change a job to, lists the execution roles (`RoleArn`, wildcards allowed) it may pass,
and says whether sessions of one role own their jobs together (`"owner": "role"`) or each session
alone (`"session"`, the default). Omitted members allow everything: `max_priority` 1000000, every
role the deployment allows, owner `session`. Admin principals are bound by no rule: they may act on
any job, at any priority, with any role the deployment allows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from smq_lambda.domain.access.principals import (
    ANY_PRINCIPAL,
    OwnerScope,
    is_owner,
    matches,
    pattern_problem,
    wildcard_match,
)
from smq_lambda.domain.jobs.model import MAX_PRIORITY, MIN_PRIORITY
from smq_lambda.errors import AccessDenied, ConfigError

DEFAULT_RULE = "default"
RULE_NAME_MAX = 64
_RULE_MEMBERS = frozenset({"name", "principals", "max_priority", "role_arns", "owner"})
_DEFAULT_MEMBERS = _RULE_MEMBERS - {"name", "principals"}


@dataclass(frozen=True)
class AccessRule:
    name: str
    principals: tuple[str, ...] = (ANY_PRINCIPAL,)
    max_priority: int = MAX_PRIORITY
    role_arns: tuple[str, ...] = (ANY_PRINCIPAL,)
    """Patterns of the execution roles a caller may pass; empty: none (the caller cannot submit)."""
    owner: OwnerScope = OwnerScope.SESSION


@dataclass(frozen=True)
class AccessRules:
    rules: tuple[AccessRule, ...] = ()
    default: AccessRule = field(default_factory=lambda: AccessRule(name=DEFAULT_RULE))

    def rule_for(self, caller: str) -> AccessRule:
        for rule in self.rules:
            if any(matches(pattern, caller) for pattern in rule.principals):
                return rule
        return self.default


UNRESTRICTED = AccessRules()
"""Where no rules are configured: every caller may use every priority and every allowed role."""

FALLBACK_RULE = "fallback-while-rules-are-invalid"
FALLBACK = AccessRules(default=AccessRule(name=FALLBACK_RULE, max_priority=0))
"""In force while the configured rules cannot be used: nobody but an admin may raise a job above
the default priority, so a broken document never lets anyone jump the queue, and jobs at the
default priority are still accepted."""


@dataclass(frozen=True)
class AccessPolicy:
    """The admin principals (a deployment setting) with the rules in force."""

    admins: Collection[str] = ()
    rules: AccessRules = UNRESTRICTED

    def is_admin(self, caller: str) -> bool:
        return any(matches(pattern, caller) for pattern in self.admins)

    def may_change(self, owner: str, caller: str) -> bool:
        """Whether `caller` may reprioritize or cancel a job `owner` submitted."""
        return self.is_admin(caller) or is_owner(owner, caller, self.rules.rule_for(caller).owner)

    def check_submission(self, caller: str, *, priority: int, role_arn: str) -> None:
        """Raises AccessDenied when a rule forbids `caller` this priority (the `priority` tag) or role."""
        if self.is_admin(caller):
            return
        rule = self.rules.rule_for(caller)
        _check_cap(rule, caller, priority, "Tags.priority")
        if not any(wildcard_match(pattern, role_arn) for pattern in rule.role_arns):
            allowed = ", ".join(rule.role_arns) or "none"
            raise AccessDenied(
                "RoleArn",
                rule.name,
                f"RoleArn: access rule {rule.name!r} does not let {caller} pass {role_arn} "
                f"(roles it allows: {allowed})",
            )

    def check_priority(self, caller: str, priority: int) -> None:
        """Raises AccessDenied when the new `priority` of a job is above the cap of the caller's rule."""
        if not self.is_admin(caller):
            _check_cap(self.rules.rule_for(caller), caller, priority, "priority")


def _check_cap(rule: AccessRule, caller: str, priority: int, field: str) -> None:
    if priority > rule.max_priority:
        raise AccessDenied(
            field,
            rule.name,
            f"{field}: access rule {rule.name!r} lets {caller} use priorities up to {rule.max_priority}, "
            f"not {priority}",
        )


def parse_access_rules(document: object, *, source: str) -> AccessRules:
    """The rules of an operator's JSON document (already decoded); ConfigError names what is wrong."""
    if not isinstance(document, Mapping):
        raise ConfigError(f"{source} must be a JSON object with 'rules' and 'default'; got {type(document).__name__}")
    unknown = set(document) - {"rules", "default"}
    if unknown:
        raise ConfigError(f"{source}: unknown member(s) {', '.join(sorted(unknown))}; expected 'rules' and 'default'")
    raw_rules = document.get("rules", [])
    if not isinstance(raw_rules, list):
        raise ConfigError(f"{source}: 'rules' must be a list of rules")
    rules = tuple(_rule(raw, f"rules[{index}]", source) for index, raw in enumerate(raw_rules))
    names = [rule.name for rule in rules]
    duplicates = sorted({name for name in names if names.count(name) > 1 or name == DEFAULT_RULE})
    if duplicates:
        raise ConfigError(f"{source}: rule names must be unique and not {DEFAULT_RULE!r}: {', '.join(duplicates)}")
    return AccessRules(rules=rules, default=_rule(document.get("default", {}), DEFAULT_RULE, source))


def _rule(raw: object, path: str, source: str) -> AccessRule:
    is_default = path == DEFAULT_RULE
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: {path} must be an object")
    allowed = _DEFAULT_MEMBERS if is_default else _RULE_MEMBERS
    unknown = set(raw) - allowed
    if unknown:
        known = ", ".join(sorted(allowed))
        raise ConfigError(f"{source}: {path} has unknown member(s) {', '.join(sorted(unknown))}; a rule has {known}")
    name = DEFAULT_RULE if is_default else _name(raw.get("name", path), f"{path}.name", source)
    return AccessRule(
        name=name,
        principals=(ANY_PRINCIPAL,) if is_default else _principals(raw.get("principals"), f"{path}.principals", source),
        max_priority=_max_priority(raw.get("max_priority", MAX_PRIORITY), f"{path}.max_priority", source),
        role_arns=_role_arns(raw.get("role_arns", [ANY_PRINCIPAL]), f"{path}.role_arns", source),
        owner=_owner(raw.get("owner", OwnerScope.SESSION), f"{path}.owner", source),
    )


def _name(value: Any, path: str, source: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= RULE_NAME_MAX:
        raise ConfigError(f"{source}: {path} must be a string of 1 to {RULE_NAME_MAX} characters")
    return value


def _principals(value: Any, path: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: {path} must be a non-empty list of principal ARN patterns")
    for pattern in value:
        problem = pattern_problem(pattern)
        if problem is not None:
            raise ConfigError(f"{source}: {path}: {problem}")
    return tuple(value)


def _max_priority(value: Any, path: str, source: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise ConfigError(f"{source}: {path} must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}")
    return value


def _role_arns(value: Any, path: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: {path} must be a list of role ARN patterns ('*' for any)")
    for pattern in value:
        if pattern != ANY_PRINCIPAL and not (pattern.startswith("arn:") and ":role/" in pattern):
            raise ConfigError(f"{source}: {path}: {pattern!r} is not '*' nor an IAM role ARN (pattern)")
    return tuple(value)


def _owner(value: Any, path: str, source: str) -> OwnerScope:
    if not isinstance(value, str) or value not in {str(scope) for scope in OwnerScope}:
        raise ConfigError(f"{source}: {path} must be one of {', '.join(OwnerScope)}")
    return OwnerScope(value)
