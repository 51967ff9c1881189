"""Which IAM principals a configured pattern names, and who owns a job.

API Gateway (AWS_IAM authorization) reports the caller as an ARN: `arn:aws:iam::111122223333:user/
alice` for an IAM user, `arn:aws:sts::111122223333:assumed-role/Research/alice` for a session of a
role. Operators, though, think in roles: `arn:aws:iam::111122223333:role/teams/Research`. A session
ARN carries the role's name but not its path, so a role pattern matches a session by the role's
name: role names are unique within an account whatever their path.

Patterns (admin principals, access rules) are one of:

- `*`: every caller;
- an IAM or STS principal ARN (`user/...`, `role/...`, `root`, `assumed-role/ROLE/SESSION`,
  `federated-user/...`), where `*` in the account or after the kind stands for any run of characters
  (`/` included, as in IAM policies) and `?` for one character. A role pattern also matches every
  session of the roles it names. A role pattern with a path must name one role
  (`role/teams/Research`): sessions do not say which path their role has, so `role/teams/*` could
  not be checked and is refused by `pattern_problem`; `role/ml-*` names every role whose name
  starts with `ml-`, whatever its path.

Matching never raises: a malformed caller or pattern matches nothing but `*`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

ANY_PRINCIPAL = "*"
_ARN = re.compile(
    r"arn:(?P<partition>aws(?:-[a-z]+)*):(?P<service>iam|sts)::(?P<account>[0-9*?]{1,12}):(?P<resource>\S+)"
)
_KINDS = {"iam": ("user/", "role/", "root"), "sts": ("assumed-role/", "federated-user/")}
_SESSION = re.compile(r"assumed-role/(?P<role>[^/]+)/(?P<session>[^/]+)")
_WILDCARD = re.compile(r"[*?]")


class OwnerScope(StrEnum):
    """Who, besides the submitting principal itself, counts as a job's owner."""

    SESSION = "session"
    """Only the exact caller ARN that submitted: another session of the same role is someone else."""
    ROLE = "role"
    """Every session of the role that submitted: a role shared by a pipeline or a team is one owner."""


@dataclass(frozen=True)
class _Arn:
    partition: str
    service: str
    account: str
    resource: str


@dataclass(frozen=True)
class RoleSession:
    """A caller that assumed a role: `arn:PARTITION:sts::ACCOUNT:assumed-role/ROLE/SESSION`."""

    partition: str
    account: str
    role: str
    session: str


def _parse(value: str) -> _Arn | None:
    match = _ARN.fullmatch(value)
    if match is None:
        return None
    return _Arn(match["partition"], match["service"], match["account"], match["resource"])


def role_session(caller: str) -> RoleSession | None:
    """The role session a caller ARN is, or None for any other principal (or a malformed ARN)."""
    arn = _parse(caller)
    if arn is None or arn.service != "sts" or _WILDCARD.search(arn.account):
        return None
    match = _SESSION.fullmatch(arn.resource)
    if match is None:
        return None
    return RoleSession(arn.partition, arn.account, match["role"], match["session"])


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot name principals, or None when it can (checked when rules are loaded)."""
    if pattern == ANY_PRINCIPAL:
        return None
    arn = _parse(pattern)
    if arn is None:
        return (
            f"{pattern!r} is not '*' nor an IAM or STS principal ARN such as "
            "arn:aws:iam::111122223333:role/Research or arn:aws:sts::111122223333:assumed-role/Research/alice"
        )
    kinds = _KINDS[arn.service]
    if not arn.resource.startswith(kinds) or arn.resource.endswith("/"):
        forms = ", ".join(f"{kind}NAME" if kind.endswith("/") else kind for kind in kinds)
        return f"{pattern!r} names no principal: {arn.service} principals are {forms}"
    if arn.resource.startswith("assumed-role/") and _SESSION.fullmatch(arn.resource) is None:
        return f"{pattern!r} must be assumed-role/ROLE/SESSION (SESSION may be *)"
    path = _role_path(arn)
    if path and _WILDCARD.search(arn.resource.removeprefix("role/")):
        return (
            f"{pattern!r} has a path and a wildcard; sessions of a role carry its name but not its path, so a "
            "role pattern with a path must name one role (or use role/NAME-PATTERN, which matches any path)"
        )
    return None


def matches(pattern: str, caller: str) -> bool:
    """Whether `caller` (an ARN as API Gateway reports it) is one of the principals `pattern` names."""
    if pattern == ANY_PRINCIPAL:
        return True
    if pattern_problem(pattern) is not None:
        return False
    if wildcard_match(pattern, caller):
        return True
    return _matches_session_of_role(pattern, caller)


def is_owner(owner: str, caller: str, scope: OwnerScope) -> bool:
    """Whether `caller` may act as the owner of a job `owner` submitted.

    With OwnerScope.ROLE, sessions of one role are one owner; a user, a root, a federated user
    or any other principal is only ever itself."""
    if caller == owner:
        return True
    if scope is OwnerScope.SESSION:
        return False
    submitted_by, acting = role_session(owner), role_session(caller)
    return (
        submitted_by is not None
        and acting is not None
        and (submitted_by.partition, submitted_by.account, submitted_by.role)
        == (acting.partition, acting.account, acting.role)
    )


def _role_path(arn: _Arn) -> str | None:
    """The path of a role pattern (`teams/` in `role/teams/Research`), `` for none; None if no role."""
    if arn.service != "iam" or not arn.resource.startswith("role/"):
        return None
    name_and_path = arn.resource.removeprefix("role/")
    return name_and_path[: name_and_path.rfind("/") + 1]


def _matches_session_of_role(pattern: str, caller: str) -> bool:
    arn = _parse(pattern)
    session = role_session(caller)
    if arn is None or session is None or _role_path(arn) is None or arn.partition != session.partition:
        return False
    role_name = arn.resource.rsplit("/", 1)[1]
    return wildcard_match(arn.account, session.account) and wildcard_match(role_name, session.role)


def wildcard_match(pattern: str, value: str) -> bool:
    """Whether `value` matches `pattern` with IAM's wildcards: `*` any run of characters (`/`
    included), `?` one character; nothing else is special (`[` is no character class)."""
    return _compiled(pattern).fullmatch(value) is not None


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"([*?])", pattern)
    return re.compile(
        "".join(".*" if part == "*" else "." if part == "?" else re.escape(part) for part in parts), re.DOTALL
    )
