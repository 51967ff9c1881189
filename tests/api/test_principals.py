"""Principal patterns and ownership (domain/access/principals.py): which callers a configured ARN names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.access.principals import OwnerScope, is_owner, matches, pattern_problem, role_session

ACCOUNT = "123456789012"
OTHER_ACCOUNT = "210987654321"
ALICE = f"arn:aws:iam::{ACCOUNT}:user/alice"
ALICE_IN_DIVISION = f"arn:aws:iam::{ACCOUNT}:user/division/alice"
OPERATOR_ROLE = f"arn:aws:iam::{ACCOUNT}:role/QueueOperator"
OPERATOR_ROLE_WITH_PATH = f"arn:aws:iam::{ACCOUNT}:role/platform/ops/QueueOperator"
OPERATOR_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator/bob@example.com"
OPERATOR_OTHER_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator/i-0abc1234"
OTHER_ROLE_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperatorX/bob"
OTHER_ACCOUNT_SESSION = f"arn:aws:sts::{OTHER_ACCOUNT}:assumed-role/QueueOperator/bob"
CHINA_SESSION = f"arn:aws-cn:sts::{ACCOUNT}:assumed-role/QueueOperator/bob"
GOVCLOUD_SESSION = f"arn:aws-us-gov:sts::{ACCOUNT}:assumed-role/QueueOperator/bob"
ROOT = f"arn:aws:iam::{ACCOUNT}:root"
FEDERATED = f"arn:aws:sts::{ACCOUNT}:federated-user/carol"


@pytest.mark.parametrize(
    ("pattern", "caller", "expected"),
    [
        # IAM users: exact, with a path, wildcards.
        (ALICE, ALICE, True),
        (ALICE, f"arn:aws:iam::{ACCOUNT}:user/alicia", False),
        (ALICE, ALICE_IN_DIVISION, False),
        (ALICE_IN_DIVISION, ALICE_IN_DIVISION, True),
        (f"arn:aws:iam::{ACCOUNT}:user/*", ALICE_IN_DIVISION, True),
        (f"arn:aws:iam::{ACCOUNT}:user/division/*", ALICE_IN_DIVISION, True),
        (f"arn:aws:iam::{ACCOUNT}:user/division/*", ALICE, False),
        (f"arn:aws:iam::{ACCOUNT}:user/ali?e", ALICE, True),
        (f"arn:aws:iam::{ACCOUNT}:user/*", OPERATOR_SESSION, False),
        # A role matches every session of it, whatever the role's path and the session's name.
        (OPERATOR_ROLE, OPERATOR_SESSION, True),
        (OPERATOR_ROLE, OPERATOR_OTHER_SESSION, True),
        (OPERATOR_ROLE_WITH_PATH, OPERATOR_SESSION, True),
        (OPERATOR_ROLE, OTHER_ROLE_SESSION, False),
        (f"arn:aws:iam::{ACCOUNT}:role/Queue*", OTHER_ROLE_SESSION, True),
        (f"arn:aws:iam::{ACCOUNT}:role/*", OPERATOR_SESSION, True),
        (f"arn:aws:iam::{ACCOUNT}:role/*", ALICE, False),
        (OPERATOR_ROLE, ALICE, False),
        # ... but only in its own account and partition.
        (OPERATOR_ROLE, OTHER_ACCOUNT_SESSION, False),
        ("arn:aws:iam::*:role/QueueOperator", OTHER_ACCOUNT_SESSION, True),
        (OPERATOR_ROLE, CHINA_SESSION, False),
        (OPERATOR_ROLE, GOVCLOUD_SESSION, False),
        (f"arn:aws-cn:iam::{ACCOUNT}:role/QueueOperator", CHINA_SESSION, True),
        (f"arn:aws-us-gov:iam::{ACCOUNT}:role/platform/ops/QueueOperator", GOVCLOUD_SESSION, True),
        (f"arn:aws-us-gov:iam::{ACCOUNT}:role/QueueOperator", CHINA_SESSION, False),
        # One session of a role, or sessions by name.
        (OPERATOR_SESSION, OPERATOR_SESSION, True),
        (OPERATOR_SESSION, OPERATOR_OTHER_SESSION, False),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator/*@example.com", OPERATOR_SESSION, True),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator/*@example.com", OPERATOR_OTHER_SESSION, False),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/*/bob@example.com", OPERATOR_SESSION, True),
        # Other principals.
        (ROOT, ROOT, True),
        (ROOT, ALICE, False),
        (FEDERATED, FEDERATED, True),
        (f"arn:aws:sts::{ACCOUNT}:federated-user/*", OPERATOR_SESSION, False),
        # Everyone, even callers that are no ARN.
        ("*", ALICE, True),
        ("*", OPERATOR_SESSION, True),
        ("*", "anonymous", True),
        # Malformed callers and patterns match nothing else.
        (ALICE, "anonymous", False),
        (OPERATOR_ROLE, "arn:aws:sts::123:assumed-role/QueueOperator/bob", False),
        (OPERATOR_ROLE, f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator", False),
        (OPERATOR_ROLE, f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator/bob/extra", False),
        (OPERATOR_ROLE, "", False),
        ("QueueOperator", OPERATOR_SESSION, False),
        ("arn:aws:iam::123456789012:group/admins", ALICE, False),
        (f"arn:aws:iam::{ACCOUNT}:role/platform/*", OPERATOR_SESSION, False),
        (f"arn:aws:s3:::{ACCOUNT}", f"arn:aws:s3:::{ACCOUNT}", False),
        ("", "", False),
    ],
)
def test_which_callers_a_pattern_names(pattern: str, caller: str, expected: bool) -> None:
    assert matches(pattern, caller) is expected


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("*", None),
        (ALICE, None),
        (OPERATOR_ROLE_WITH_PATH, None),
        (f"arn:aws:iam::{ACCOUNT}:role/Queue*", None),
        (OPERATOR_SESSION, None),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator/*", None),
        (ROOT, None),
        ("QueueOperator", "is not '*' nor an IAM or STS principal ARN"),
        ("arn:aws:iam::123:role/x y", "is not '*' nor an IAM or STS principal ARN"),
        (f"arn:aws:s3:::{ACCOUNT}", "is not '*' nor an IAM or STS principal ARN"),
        (f"arn:aws:iam::{ACCOUNT}:group/admins", "names no principal"),
        (f"arn:aws:iam::{ACCOUNT}:role/", "names no principal"),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator", "must be assumed-role/ROLE/SESSION"),
        (f"arn:aws:iam::{ACCOUNT}:role/platform/*", "has a path and a wildcard"),
        (f"arn:aws:iam::{ACCOUNT}:role/platform/Queue?perator", "has a path and a wildcard"),
        (f"arn:aws:iam::{ACCOUNT}:role/*/QueueOperator", "has a path and a wildcard"),
    ],
)
def test_patterns_that_cannot_name_callers_are_explained(pattern: str, problem: str | None) -> None:
    found = pattern_problem(pattern)

    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_a_role_session_is_read_from_its_arn() -> None:
    session = role_session(GOVCLOUD_SESSION)

    assert session is not None
    assert (session.partition, session.account, session.role, session.session) == (
        "aws-us-gov",
        ACCOUNT,
        "QueueOperator",
        "bob",
    )
    assert role_session(ALICE) is None
    assert role_session(f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueOperator") is None


@pytest.mark.parametrize(
    ("owner", "caller", "scope", "expected"),
    [
        (ALICE, ALICE, OwnerScope.SESSION, True),
        (ALICE, ALICE_IN_DIVISION, OwnerScope.ROLE, False),
        (OPERATOR_SESSION, OPERATOR_SESSION, OwnerScope.SESSION, True),
        (OPERATOR_SESSION, OPERATOR_OTHER_SESSION, OwnerScope.SESSION, False),
        (OPERATOR_SESSION, OPERATOR_OTHER_SESSION, OwnerScope.ROLE, True),
        (OPERATOR_SESSION, OTHER_ROLE_SESSION, OwnerScope.ROLE, False),
        (OPERATOR_SESSION, OTHER_ACCOUNT_SESSION, OwnerScope.ROLE, False),
        (OPERATOR_SESSION, CHINA_SESSION, OwnerScope.ROLE, False),
        (OPERATOR_SESSION, OPERATOR_ROLE, OwnerScope.ROLE, False),
        ("anonymous", "anonymous", OwnerScope.ROLE, True),
        (FEDERATED, f"arn:aws:sts::{ACCOUNT}:federated-user/dave", OwnerScope.ROLE, False),
    ],
)
def test_who_owns_a_job(owner: str, caller: str, scope: OwnerScope, expected: bool) -> None:
    assert is_owner(owner, caller, scope) is expected


IAM_NAME = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+=,.@_-", min_size=1, max_size=64
)
PATH = st.lists(IAM_NAME, max_size=3).map(lambda parts: "".join(f"{part}/" for part in parts))
PARTITION = st.sampled_from(["aws", "aws-cn", "aws-us-gov", "aws-iso", "aws-iso-b"])
ACCOUNT_ID = st.from_regex(r"[0-9]{12}", fullmatch=True)


@given(PARTITION, ACCOUNT_ID, PATH, IAM_NAME, IAM_NAME)
def test_a_role_arn_names_every_session_of_that_role(
    partition: str, account: str, path: str, role: str, session: str
) -> None:
    caller = f"arn:{partition}:sts::{account}:assumed-role/{role}/{session}"

    assert matches(f"arn:{partition}:iam::{account}:role/{path}{role}", caller)
    assert not matches(f"arn:{partition}:iam::{account}:role/{path}{role}x", caller)
    assert not matches(f"arn:{partition}-x:iam::{account}:role/{path}{role}", caller)
    other_account = f"{(int(account) + 1) % 10**12:012d}"
    assert not matches(f"arn:{partition}:iam::{other_account}:role/{path}{role}", caller)


@given(PARTITION, ACCOUNT_ID, PATH, IAM_NAME)
def test_an_exact_user_arn_names_that_user_only(partition: str, account: str, path: str, name: str) -> None:
    user = f"arn:{partition}:iam::{account}:user/{path}{name}"

    assert matches(user, user)
    assert not matches(user, f"{user}x")
    assert not matches(user, f"arn:{partition}:sts::{account}:assumed-role/{name}/{name}")


@given(st.text(max_size=80), st.text(max_size=80))
def test_matching_never_raises_and_only_star_names_everyone(pattern: str, caller: str) -> None:
    matched = matches(pattern, caller)

    assert isinstance(matched, bool)
    if pattern_problem(pattern) is not None:
        assert matched is (pattern == "*")
