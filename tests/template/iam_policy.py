"""What IAM would decide for a function of template.yaml: its role's inline statements (the
function's `Policies`, intrinsics resolved to one stack's concrete ARNs), the actions and resource
ARNs one AWS call is authorized by, and IAM's matching of the two (wildcards, conditions).

moto's own IAM check (the local stack switches it on) names an action after the operation and
checks no resource or condition; this is the exact check, run over the calls a test recorded:
`TransactWriteItems` is authorized per item it contains, `DeleteMessageBatch` as `DeleteMessage`,
`CreateTrainingJob` also needs `iam:PassRole` on its role, passed to SageMaker.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from smq.local.template import Resolver, function_policies


@dataclass(frozen=True)
class Authorization:
    """One action on one resource that a call needs, with the request's condition context."""

    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.action} on {self.resource}"


@dataclass(frozen=True)
class Call:
    """One AWS call as botocore made it: the service's name, the operation and its parameters."""

    service: str
    operation: str
    params: Mapping[str, Any]


def _matches(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    """IAM's wildcards: `*` any run of characters, `?` any one; nothing else is special."""
    regex = "".join(".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern)
    return re.fullmatch(regex, value, 0 if case_sensitive else re.IGNORECASE) is not None


_CONDITIONS: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": lambda expected, actual: expected == actual,
    "StringLike": lambda expected, actual: fnmatch.fnmatchcase(actual, expected),
    "ArnEquals": lambda expected, actual: expected == actual,
    "ArnLike": lambda expected, actual: _matches(expected, actual),
}


def _as_list(item: Any) -> list[Any]:
    return item if isinstance(item, list) else [item]


@dataclass(frozen=True)
class FunctionPolicy:
    """The Allow statements of a function's role (Effect Deny is refused: the template has none)."""

    function: str
    statements: tuple[Mapping[str, Any], ...]

    @classmethod
    def of(
        cls,
        template: Mapping[str, Any],
        function: str,
        resolve: Resolver,
        *,
        parameter_overrides: Mapping[str, Any] | None = None,
        pseudo_parameters: Mapping[str, str] | None = None,
    ) -> FunctionPolicy:
        statements: list[Mapping[str, Any]] = []
        documents = function_policies(
            template, function, resolve, parameter_overrides=parameter_overrides, pseudo_parameters=pseudo_parameters
        )
        for document in documents:
            for statement in document["Statement"]:
                if statement.get("Effect") != "Allow":
                    raise ValueError(f"{function}: only Allow statements are read: {statement!r}")
                statements.append(statement)
        return cls(function, tuple(statements))

    def allows(self, authorization: Authorization) -> bool:
        return any(self._statement_allows(statement, authorization) for statement in self.statements)

    def actions(self) -> set[str]:
        return {action for statement in self.statements for action in _as_list(statement["Action"])}

    @staticmethod
    def _statement_allows(statement: Mapping[str, Any], authorization: Authorization) -> bool:
        if not any(
            _matches(action, authorization.action, case_sensitive=False) for action in _as_list(statement["Action"])
        ):
            return False
        if not any(_matches(resource, authorization.resource) for resource in _as_list(statement["Resource"])):
            return False
        for operator, keys in (statement.get("Condition") or {}).items():
            compare = _CONDITIONS[operator]
            for key, expected in keys.items():
                actual = authorization.context.get(key)
                if actual is None or not any(compare(value, actual) for value in _as_list(expected)):
                    return False
        return True


@dataclass(frozen=True)
class Arns:
    """How one stack's resources are named, for the calls that name them by name or URL."""

    region: str
    account: str

    def table(self, name: str) -> str:
        return f"arn:aws:dynamodb:{self.region}:{self.account}:table/{name}"

    def parameter(self, name: str) -> str:
        return f"arn:aws:ssm:{self.region}:{self.account}:parameter/{name.lstrip('/')}"

    def alarm(self, name: str) -> str:
        return f"arn:aws:cloudwatch:{self.region}:{self.account}:alarm:{name}"

    def training_job(self, name: str) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self.account}:training-job/{name.lower()}"

    @staticmethod
    def queue(url: str) -> str:
        """sqs.<region>.amazonaws.com/<account>/<name> (moto's and AWS's queue URLs)."""
        parsed = urlparse(url)
        account, name = parsed.path.strip("/").split("/")[-2:]
        region = parsed.hostname.split(".")[1] if parsed.hostname and parsed.hostname.count(".") >= 3 else "us-east-1"
        return f"arn:aws:sqs:{region}:{account}:{name}"


_TRANSACT_WRITE = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
_SQS_BATCH = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}
_UNSCOPED = {
    ("sagemaker", "ListTrainingJobs"),
    ("cloudwatch", "PutMetricData"),
    ("sts", "GetCallerIdentity"),
    ("pricing", "GetProducts"),
}
"""Operations IAM authorizes on no resource (Resource "*")."""


def authorizations(call: Call, arns: Arns) -> list[Authorization]:
    """Every action and resource `call` needs, as the Service Authorization Reference lists them.
    An operation not mapped here raises: a new kind of call must be mapped before it is trusted."""
    service, operation, params = call.service, call.operation, call.params
    if (service, operation) in _UNSCOPED:
        return [Authorization(f"{service}:{operation}", "*")]
    mapper = _MAPPERS.get(service)
    if mapper is None:
        raise LookupError(f"no IAM mapping for {service}:{operation}; add one to tests/template/iam_policy.py")
    found = list(mapper(operation, params, arns))
    if not found:
        raise LookupError(f"no IAM mapping for {service}:{operation}; add one to tests/template/iam_policy.py")
    return found


def _dynamodb(operation: str, params: Mapping[str, Any], arns: Arns) -> Iterator[Authorization]:
    if operation == "TransactWriteItems":
        for item in params["TransactItems"]:
            ((kind, request),) = item.items()
            yield Authorization(f"dynamodb:{_TRANSACT_WRITE[kind]}", arns.table(request["TableName"]))
    elif operation == "TransactGetItems":
        for item in params["TransactItems"]:
            yield Authorization("dynamodb:GetItem", arns.table(item["Get"]["TableName"]))
    elif operation in ("BatchGetItem", "BatchWriteItem"):
        for table in params["RequestItems"]:
            yield Authorization(f"dynamodb:{operation}", arns.table(table))
    elif "TableName" in params:
        table = arns.table(params["TableName"])
        index = params.get("IndexName")
        yield Authorization(f"dynamodb:{operation}", f"{table}/index/{index}" if index else table)


def _ssm(operation: str, params: Mapping[str, Any], arns: Arns) -> Iterator[Authorization]:
    names = params.get("Names") or ([params["Name"]] if "Name" in params else [])
    if operation == "GetParametersByPath":
        names = [params["Path"]]
    for name in names:
        yield Authorization(f"ssm:{operation}", arns.parameter(name))


def _sns(operation: str, params: Mapping[str, Any], arns: Arns) -> Iterator[Authorization]:
    action = "Publish" if operation == "PublishBatch" else operation
    topic = params.get("TopicArn") or params.get("TargetArn")
    if topic:
        yield Authorization(f"sns:{action}", topic)


def _sqs(operation: str, params: Mapping[str, Any], arns: Arns) -> Iterator[Authorization]:
    if "QueueUrl" in params:
        yield Authorization(f"sqs:{_SQS_BATCH.get(operation, operation)}", arns.queue(params["QueueUrl"]))


def _cloudwatch(operation: str, params: Mapping[str, Any], arns: Arns) -> Iterator[Authorization]:
    action = f"cloudwatch:{operation}"
    if operation == "PutMetricAlarm":
        yield Authorization(action, arns.alarm(params["AlarmName"]))
    elif operation in ("DeleteAlarms", "DescribeAlarms") and params.get("AlarmNames"):
        yield from (Authorization(action, arns.alarm(name)) for name in params["AlarmNames"])
    elif operation == "DescribeAlarms":
        # A listing by prefix reads every alarm the prefix names: the grant must cover the prefix.
        yield Authorization(action, arns.alarm(f"{params.get('AlarmNamePrefix', '')}*"))


def _sagemaker(operation: str, params: Mapping[str, Any], arns: Arns) -> Iterator[Authorization]:
    if "TrainingJobName" in params:
        yield Authorization(f"sagemaker:{operation}", arns.training_job(params["TrainingJobName"]))
    elif "ResourceArn" in params:
        yield Authorization(f"sagemaker:{operation}", params["ResourceArn"])
    if operation == "CreateTrainingJob":
        context = {"iam:PassedToService": "sagemaker.amazonaws.com"}
        yield Authorization("iam:PassRole", params["RoleArn"], context)


_MAPPERS: dict[str, Callable[[str, Mapping[str, Any], Arns], Iterator[Authorization]]] = {
    "dynamodb": _dynamodb,
    "ssm": _ssm,
    "sns": _sns,
    "sqs": _sqs,
    "cloudwatch": _cloudwatch,
    "sagemaker": _sagemaker,
}


def denied(policy: FunctionPolicy, calls: list[Call], arns: Arns) -> list[str]:
    """What IAM would refuse the function among `calls`, one line per call and authorization."""
    refused = {
        f"{policy.function}: {call.service}:{call.operation} needs {authorization}"
        for call in calls
        for authorization in authorizations(call, arns)
        if not policy.allows(authorization)
    }
    return sorted(refused)
