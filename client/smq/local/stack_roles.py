"""IAM in the local stack, enforced as AWS enforces it: each of the template's functions runs with
the credentials of a role of its own, made in moto from the function's `Policies`, and moto checks
every call the function makes against that role (moto's IAM access control, switched on once the
roles exist).

    the stack's own parts, users, the CLI  ─ the admin user (any action) ─┐
    a function's handler, in this process  ─ its role's session ──────────┴─> moto: allowed?

moto checks the action only, never the resource or a condition, and names an action after the
operation called: its copy of a role allows each statement's actions on any resource, plus the
names moto gives the batch and transaction operations AWS authorizes through the actions they
contain. The resources and conditions are checked exactly by tests/template/
test_function_permissions.py. The local SageMaker service checks no IAM at all.

The functions share this process, so their clients cannot read credentials from the environment:
boto3's default session hands every client `FunctionCredentials`, which sign each request with the
role of the function running in the calling thread (`running_as`), and with the admin's outside one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import boto3
import botocore.session
import requests
from botocore.credentials import CredentialProvider, Credentials, ReadOnlyCredentials

ADMIN_USER = "smq-local-admin"
"""The principal of everything that is not a function: the stack's emulators and its users."""
LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
MOTO_OPERATIONS = {
    "dynamodb:PutItem": "dynamodb:TransactWriteItems",
    "dynamodb:UpdateItem": "dynamodb:TransactWriteItems",
    "dynamodb:DeleteItem": "dynamodb:TransactWriteItems",
    "dynamodb:ConditionCheckItem": "dynamodb:TransactWriteItems",
    "dynamodb:GetItem": "dynamodb:TransactGetItems",
    "sqs:SendMessage": "sqs:SendMessageBatch",
    "sqs:DeleteMessage": "sqs:DeleteMessageBatch",
    "sqs:ChangeMessageVisibility": "sqs:ChangeMessageVisibilityBatch",
    "sns:Publish": "sns:PublishBatch",
}
"""An action AWS authorizes a batch or transaction through → the operation's name, moto's action."""
MOTO_SERVICE_PREFIXES = {"cloudwatch": "monitoring"}
"""moto prefixes an action with the service's signing name where it differs from IAM's prefix."""

_running: ContextVar[str | None] = ContextVar("smq_local_function", default=None)


def moto_policy(document: Mapping[str, Any]) -> dict[str, Any]:
    """The copy of a policy document moto can enforce: each statement's actions (and the moto names
    of the operations they authorize) on any resource, without conditions."""
    statements = []
    for statement in document["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        named = [*actions, *(MOTO_OPERATIONS[action] for action in actions if action in MOTO_OPERATIONS)]
        extra = [_signing_named(action) for action in named]
        statements.append({"Effect": statement["Effect"], "Action": sorted({*named, *extra}), "Resource": "*"})
    return {"Version": "2012-10-17", "Statement": statements}


def _signing_named(action: str) -> str:
    prefix, _, operation = action.partition(":")
    return f"{MOTO_SERVICE_PREFIXES.get(prefix, prefix)}:{operation}"


@contextmanager
def running_as(function: str) -> Iterator[None]:
    """AWS calls made in the block, in this thread, are `function`'s."""
    token = _running.set(function)
    try:
        yield
    finally:
        _running.reset(token)


class FunctionCredentials(Credentials):
    """The credentials of the function running in the calling thread, read at each request's
    signing (botocore signs with `get_frozen_credentials()`); the admin's outside any function."""

    def __init__(self, roles: Mapping[str, Credentials], admin: Credentials) -> None:
        # Not Credentials.__init__: its keys are fixed attributes, these depend on the caller.
        self._roles = dict(roles)
        self._admin = admin
        self.method = "smq-local-function-roles"
        self.account_id = None

    def _current(self) -> Credentials:
        function = _running.get()
        if function is None:
            return self._admin
        return self._roles[function]

    @property  # type: ignore[override]
    def access_key(self) -> str:
        return self._current().access_key

    @property  # type: ignore[override]
    def secret_key(self) -> str:
        return self._current().secret_key

    @property  # type: ignore[override]
    def token(self) -> str | None:
        return self._current().token

    def get_frozen_credentials(self) -> ReadOnlyCredentials:
        return self._current().get_frozen_credentials()


class _Provider(CredentialProvider):
    METHOD = "smq-local-function-roles"

    def __init__(self, credentials: Credentials) -> None:
        super().__init__()
        self._credentials = credentials

    def load(self) -> Credentials:
        return self._credentials


class StackIdentities:
    """`create(policies)` before IAM is enforced (it makes the admin and the roles), then `enforce()`;
    `restore()` undoes what `enforce()` changed in this process. `client(service, **keys)` makes a
    boto3 client of moto with the keys given."""

    def __init__(self, moto_url: str, client: Callable[..., Any]) -> None:
        self._moto_url = moto_url
        self._client = client
        self._admin: Credentials | None = None
        self._roles: dict[str, Credentials] = {}
        self._saved_no_auth_count: str | None = None
        self._saved_session: boto3.session.Session | None = None
        self._installed = False

    @property
    def admin_keys(self) -> dict[str, str]:
        """The admin's keys as the environment variables boto3 reads."""
        assert self._admin is not None, "the identities are not created"
        return {"AWS_ACCESS_KEY_ID": self._admin.access_key, "AWS_SECRET_ACCESS_KEY": self._admin.secret_key}

    def create(self, policies: Mapping[str, list[dict[str, Any]]]) -> None:
        """The admin user and its keys; per function, its role with one inline policy per document
        of its `Policies`, and a session of it (its credentials)."""
        iam, sts = self._client("iam"), self._client("sts")
        iam.create_user(UserName=ADMIN_USER)
        iam.put_user_policy(
            UserName=ADMIN_USER,
            PolicyName="everything",
            PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
            ),
        )
        key = iam.create_access_key(UserName=ADMIN_USER)["AccessKey"]
        self._admin = Credentials(key["AccessKeyId"], key["SecretAccessKey"])
        for function, documents in policies.items():
            role = f"smq-{function}-role"
            arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(LAMBDA_TRUST))["Role"]["Arn"]
            for number, document in enumerate(documents):
                iam.put_role_policy(
                    RoleName=role,
                    PolicyName=f"{function}Policy{number}",
                    PolicyDocument=json.dumps(moto_policy(document)),
                )
            session = sts.assume_role(RoleArn=arn, RoleSessionName=function)["Credentials"]
            self._roles[function] = Credentials(
                session["AccessKeyId"], session["SecretAccessKey"], session["SessionToken"]
            )

    def enforce(self) -> None:
        """Switch moto's IAM check on, and have boto3's default session sign as the running function."""
        assert self._admin is not None, "the identities are not created"
        answer = requests.post(f"{self._moto_url}/moto-api/reset-auth", data=b"0", timeout=10)
        answer.raise_for_status()
        self._saved_no_auth_count = answer.json()["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"]
        session = botocore.session.get_session()
        resolver = session.get_component("credential_provider")
        resolver.insert_before("env", _Provider(FunctionCredentials(self._roles, self._admin)))
        self._saved_session = boto3.DEFAULT_SESSION
        boto3.setup_default_session(botocore_session=session)
        self._installed = True

    def restore(self) -> None:
        """moto's IAM check as it was (moto's settings are this process's), and boto3's session."""
        if self._saved_no_auth_count is not None:
            requests.post(
                f"{self._moto_url}/moto-api/reset-auth", data=self._saved_no_auth_count.encode(), timeout=10
            ).raise_for_status()
            self._saved_no_auth_count = None
        if self._installed:
            boto3.DEFAULT_SESSION = self._saved_session
            self._saved_session = None
            self._installed = False
