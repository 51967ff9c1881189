"""Read template.yaml so that the local stack builds what CloudFormation would build.

The template is the single source of truth for the queue table, the SSM parameters, the queues,
what EventBridge puts on them and which function consumes them, and the functions' environment; the
local stack derives all of it from here instead of repeating it.
Only the intrinsic functions those parts can use are evaluated; anything else raises TemplateError
rather than silently producing a value CloudFormation would not.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Resolver = Callable[[str, str | None], Any]
"""resolve(logical_id, attribute): a resource's Ref (attribute None) or Fn::GetAtt value."""

PSEUDO_PARAMETERS: dict[str, str] = {
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
    "AWS::Partition": "aws",
    "AWS::StackName": "smq",
    "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/smq/local",
    "AWS::URLSuffix": "amazonaws.com",
}
"""Local values of the pseudo parameters (moto's default account); callers may override them."""

# Ref of these resource types returns the name property when the template sets one, so such a
# Ref can be answered from the template itself, exactly as CloudFormation would.
_NAME_PROPERTY_OF_REF = {
    "AWS::SSM::Parameter": "Name",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Serverless::Function": "FunctionName",
}

_SHORT_TAGS = {
    "Ref": "Ref",
    "Condition": "Condition",
    "Sub": "Fn::Sub",
    "GetAtt": "Fn::GetAtt",
    "If": "Fn::If",
    "Equals": "Fn::Equals",
    "Not": "Fn::Not",
    "And": "Fn::And",
    "Or": "Fn::Or",
    "Select": "Fn::Select",
    "Split": "Fn::Split",
    "Join": "Fn::Join",
    "FindInMap": "Fn::FindInMap",
    "Base64": "Fn::Base64",
    "Transform": "Fn::Transform",
    "ImportValue": "Fn::ImportValue",
    "GetAZs": "Fn::GetAZs",
    "Cidr": "Fn::Cidr",
    "Contains": "Fn::Contains",
}

_NO_VALUE = object()
_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


class TemplateError(ValueError):
    """The template uses something this reader cannot evaluate, or lacks what was asked for."""


class _TemplateLoader(yaml.SafeLoader):
    """SafeLoader plus CloudFormation's short-form tags.

    Timestamps stay strings: CloudFormation reads `2010-09-09` as text, not as a date.
    """


_TemplateLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _long_form(key: str) -> Callable[[yaml.SafeLoader, yaml.Node], dict[str, Any]]:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        value: Any
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
            if key == "Fn::GetAtt":
                value = value.split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
        return {key: value}

    return construct


for _tag, _key in _SHORT_TAGS.items():
    _TemplateLoader.add_constructor(f"!{_tag}", _long_form(_key))


def load_template(path: str | Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM YAML template, short-form tags turned into long-form dicts."""
    with open(path, encoding="utf-8") as stream:
        template = yaml.load(stream, Loader=_TemplateLoader)
    if not isinstance(template, dict) or not isinstance(template.get("Resources"), dict):
        raise TemplateError(f"{path}: not a CloudFormation template (no Resources)")
    return template


# --------------------------------------------------------------------------- evaluation


class _Evaluator:
    """Evaluates intrinsic functions against parameter values, pseudo parameters and a resolver."""

    def __init__(
        self,
        template: Mapping[str, Any],
        resolve: Resolver | None,
        parameter_overrides: Mapping[str, Any] | None,
        pseudo_parameters: Mapping[str, str] | None,
    ) -> None:
        self._template = template
        self._resolve = resolve
        self._overrides = dict(parameter_overrides or {})
        self._pseudo = {**PSEUDO_PARAMETERS, **(pseudo_parameters or {})}
        self._conditions: dict[str, bool] = {}

    def value(self, node: Any) -> Any:
        """The evaluated node; _NO_VALUE for AWS::NoValue."""
        if isinstance(node, list):
            return [item for item in (self.value(element) for element in node) if item is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, argument),) = node.items()
            if key == "Ref":
                return self._ref(argument)
            if key.startswith("Fn::"):
                return self._function(key, argument)
        return {key: item for key, item in ((k, self.value(v)) for k, v in node.items()) if item is not _NO_VALUE}

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            conditions = self._template.get("Conditions") or {}
            if name not in conditions:
                raise TemplateError(f"unknown condition {name!r}")
            self._conditions[name] = self._truth(conditions[name])
        return self._conditions[name]

    def parameter(self, name: str) -> Any:
        declaration = (self._template.get("Parameters") or {}).get(name)
        if declaration is None:
            raise TemplateError(f"unknown parameter {name!r}")
        if name in self._overrides:
            raw = self._overrides[name]
        elif "Default" in declaration:
            raw = declaration["Default"]
        else:
            raise TemplateError(f"parameter {name!r} has no default; pass it in parameter_overrides")
        if str(declaration.get("Type", "String")).startswith(("CommaDelimitedList", "List<")):
            if isinstance(raw, (list, tuple)):
                return [str(item) for item in raw]
            return [item.strip() for item in str(raw).split(",")]
        return _text(raw)

    def _truth(self, node: Any) -> bool:
        if isinstance(node, dict) and len(node) == 1:
            ((key, argument),) = node.items()
            if key == "Condition":
                return self.condition(argument)
            if key == "Fn::Equals":
                left, right = (self.value(item) for item in argument)
                return _text(left) == _text(right)
            if key == "Fn::Not":
                return not self._truth(argument[0])
            if key == "Fn::And":
                return all(self._truth(item) for item in argument)
            if key == "Fn::Or":
                return any(self._truth(item) for item in argument)
            if key == "Fn::Contains":  # only valid in Rules
                items, item = (self.value(part) for part in argument)
                return _text(item) in [_text(element) for element in items]
        raise TemplateError(f"not a condition: {node!r}")

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name in self._pseudo:
            return self._pseudo[name]
        if name in (self._template.get("Parameters") or {}):
            return self.parameter(name)
        resource = (self._template.get("Resources") or {}).get(name)
        if resource is None:
            raise TemplateError(f"Ref to unknown name {name!r}")
        name_property = _NAME_PROPERTY_OF_REF.get(resource.get("Type", ""))
        properties = resource.get("Properties") or {}
        if name_property and name_property in properties:
            return self.value(properties[name_property])
        return self._resource(name, None)

    def _resource(self, logical_id: str, attribute: str | None) -> Any:
        if self._resolve is None:
            what = f"{logical_id}.{attribute}" if attribute else logical_id
            raise TemplateError(f"{what} needs a resolver")
        return self._resolve(logical_id, attribute)

    def _function(self, key: str, argument: Any) -> Any:
        if key == "Fn::If":
            name, if_true, if_false = argument
            return self.value(if_true if self.condition(name) else if_false)
        if key == "Fn::GetAtt":
            logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
            return self._resource(logical_id, self.value(attribute))
        if key == "Fn::Sub":
            return self._sub(argument)
        if key == "Fn::Join":
            delimiter, items = argument
            return _text(self.value(delimiter)).join(_text(item) for item in self.value(items))
        if key == "Fn::Split":
            delimiter, source = argument
            return _text(self.value(source)).split(_text(self.value(delimiter)))
        if key == "Fn::Select":
            index, items = argument
            return self.value(items)[int(self.value(index))]
        if key == "Fn::FindInMap":
            mapping, top, second = (self.value(item) for item in argument)
            try:
                return self._template["Mappings"][mapping][top][second]
            except KeyError as exc:
                raise TemplateError(f"Fn::FindInMap: no {mapping}/{top}/{second}") from exc
        if key == "Fn::Base64":
            return base64.b64encode(_text(self.value(argument)).encode()).decode()
        if key in ("Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Fn::Contains"):
            return self._truth({key: argument})
        raise TemplateError(f"{key} cannot be evaluated locally")

    def _sub(self, argument: Any) -> str:
        if isinstance(argument, list):
            text, variables = argument[0], {k: self.value(v) for k, v in argument[1].items()}
        else:
            text, variables = argument, {}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            if name in variables:
                return _text(variables[name])
            if name in self._pseudo or name in (self._template.get("Parameters") or {}):
                value = self._ref(name)
                if isinstance(value, list):
                    raise TemplateError(f"Fn::Sub cannot use list parameter {name!r}")
                return _text(value)
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return _text(self._resource(logical_id, attribute))
            return _text(self._ref(name))

        return _SUB_VARIABLE.sub(replace, text).replace("${!", "${")


def _text(value: Any) -> str:
    """A scalar as CloudFormation passes it on: always a string, booleans lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, (dict, list)) or value is _NO_VALUE:
        raise TemplateError(f"not a scalar: {value!r}")
    return str(value)


def _resources_of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in (template.get("Resources") or {}).items()
        if resource.get("Type") == resource_type
    }


# --------------------------------------------------------------------------- the parts


_GSI_KEYS = ("IndexName", "KeySchema", "Projection", "ProvisionedThroughput", "OnDemandThroughput")


def table_definition(
    template: Mapping[str, Any],
    table_name: str | None = None,
    logical_id: str | None = None,
) -> dict[str, Any]:
    """The template's DynamoDB table as boto3 `create_table` keyword arguments.

    TableName is `table_name`, else the template's plain TableName, else the logical id. The
    result also carries `TimeToLiveSpecification` in the shape `update_time_to_live` takes (pop it
    before calling create_table) when the template enables TTL.
    """
    tables = _resources_of_type(template, "AWS::DynamoDB::Table")
    if logical_id is None:
        if len(tables) != 1:
            raise TemplateError(f"expected one AWS::DynamoDB::Table, found {sorted(tables)}")
        ((logical_id, resource),) = tables.items()
    elif logical_id in tables:
        resource = tables[logical_id]
    else:
        raise TemplateError(f"{logical_id!r} is not an AWS::DynamoDB::Table")
    properties = resource.get("Properties") or {}
    template_name = properties.get("TableName")
    definition: dict[str, Any] = {
        "TableName": table_name or (template_name if isinstance(template_name, str) else logical_id),
        "KeySchema": properties["KeySchema"],
        "AttributeDefinitions": properties["AttributeDefinitions"],
        "BillingMode": properties.get("BillingMode", "PROVISIONED"),
    }
    if "ProvisionedThroughput" in properties:
        definition["ProvisionedThroughput"] = properties["ProvisionedThroughput"]
    if properties.get("GlobalSecondaryIndexes"):
        definition["GlobalSecondaryIndexes"] = [
            {key: index[key] for key in _GSI_KEYS if key in index} for index in properties["GlobalSecondaryIndexes"]
        ]
    sse = properties.get("SSESpecification")
    if sse and sse.get("SSEEnabled") is True:
        definition["SSESpecification"] = {"Enabled": True}
    ttl = properties.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled") is True:
        definition["TimeToLiveSpecification"] = {"Enabled": True, "AttributeName": ttl["AttributeName"]}
    return definition


def function_environment(
    template: Mapping[str, Any],
    function_logical_id: str,
    resolve: Resolver,
    *,
    parameter_overrides: Mapping[str, Any] | None = None,
    pseudo_parameters: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A function's environment: Globals merged with the function's own variables, evaluated.

    Parameters take their defaults unless overridden. `resolve(logical_id, attribute)` answers
    Ref (attribute None) and Fn::GetAtt of resources, except a Ref the template answers itself
    (an SSM parameter's Name, a table's TableName, a function's FunctionName when set).
    """
    resource = (template.get("Resources") or {}).get(function_logical_id)
    if resource is None or resource.get("Type") not in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
        raise TemplateError(f"{function_logical_id!r} is not a function of the template")
    global_variables = (((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get(
        "Variables"
    ) or {}
    if resource["Type"] != "AWS::Serverless::Function":
        global_variables = {}
    own_variables = (((resource.get("Properties") or {}).get("Environment") or {}).get("Variables")) or {}
    evaluator = _Evaluator(template, resolve, parameter_overrides, pseudo_parameters)
    environment: dict[str, str] = {}
    for name, node in {**global_variables, **own_variables}.items():
        value = evaluator.value(node)
        if value is not _NO_VALUE:
            environment[name] = _text(value)
    return environment


def sns_subscriptions(
    template: Mapping[str, Any],
    resolve: Resolver,
    *,
    parameter_overrides: Mapping[str, Any] | None = None,
    pseudo_parameters: Mapping[str, str] | None = None,
) -> list[tuple[str, str, str]]:
    """(function logical id, its Handler, topic) for every SNS event source of the template's
    functions: the subscriptions SAM creates for `Events: {Type: SNS}`. `resolve` answers the
    topic's Ref (its ARN)."""
    evaluator = _Evaluator(template, resolve, parameter_overrides, pseudo_parameters)
    subscriptions = []
    for logical_id, resource in _resources_of_type(template, "AWS::Serverless::Function").items():
        properties = resource.get("Properties") or {}
        for event in (properties.get("Events") or {}).values():
            if event.get("Type") == "SNS":
                topic = _text(evaluator.value(event["Properties"]["Topic"]))
                subscriptions.append((logical_id, _text(properties["Handler"]), topic))
    return subscriptions


def evaluate(
    template: Mapping[str, Any],
    node: Any,
    resolve: Resolver | None = None,
    *,
    parameter_overrides: Mapping[str, Any] | None = None,
    pseudo_parameters: Mapping[str, str] | None = None,
) -> Any:
    """Any part of the template with its intrinsic functions evaluated (None for AWS::NoValue).

    Conditions are evaluated from the template's Conditions with the same parameter values.
    """
    value = _Evaluator(template, resolve, parameter_overrides, pseudo_parameters).value(node)
    return None if value is _NO_VALUE else value


def ssm_parameters(
    template: Mapping[str, Any],
    parameter_overrides: Mapping[str, Any] | None = None,
    *,
    pseudo_parameters: Mapping[str, str] | None = None,
) -> list[tuple[str, str]]:
    """(name, value) of every AWS::SSM::Parameter the template creates, in template order."""
    evaluator = _Evaluator(template, None, parameter_overrides, pseudo_parameters)
    parameters = []
    for logical_id, resource in _resources_of_type(template, "AWS::SSM::Parameter").items():
        properties = resource.get("Properties") or {}
        if "Name" not in properties:
            raise TemplateError(f"SSM parameter {logical_id} has no Name; the local stack needs one")
        parameters.append((_text(evaluator.value(properties["Name"])), _text(evaluator.value(properties["Value"]))))
    return parameters


# --------------------------------------------------------------------------- queues and their consumers

_QUEUE_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "SqsManagedSseEnabled",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "FifoQueue",
    "ContentBasedDeduplication",
)
"""The AWS::SQS::Queue properties that are CreateQueue attributes of the same name and meaning."""


def sqs_queues(template: Mapping[str, Any]) -> list[str]:
    """The logical ids of the template's AWS::SQS::Queue resources, each dead-letter queue before
    the queues whose RedrivePolicy names it (the order they can be created in)."""
    queues = _resources_of_type(template, "AWS::SQS::Queue")
    ordered: list[str] = []

    def visit(logical_id: str, path: tuple[str, ...]) -> None:
        if logical_id in ordered:
            return
        if logical_id in path:
            raise TemplateError(f"queues redrive to each other: {' -> '.join((*path, logical_id))}")
        redrive = (queues[logical_id].get("Properties") or {}).get("RedrivePolicy") or {}
        target = _get_att_of(redrive.get("deadLetterTargetArn") if isinstance(redrive, dict) else None)
        if target is not None and target in queues:
            visit(target, (*path, logical_id))
        ordered.append(logical_id)

    for logical_id in queues:
        visit(logical_id, ())
    return ordered


def sqs_queue_attributes(
    template: Mapping[str, Any],
    logical_id: str,
    resolve: Resolver,
    *,
    parameter_overrides: Mapping[str, Any] | None = None,
    pseudo_parameters: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """One queue's properties as CreateQueue `Attributes` (strings; the RedrivePolicy as JSON).
    `resolve` answers the dead-letter queue's Arn, so create that queue first (see `sqs_queues`)."""
    resource = _resources_of_type(template, "AWS::SQS::Queue").get(logical_id)
    if resource is None:
        raise TemplateError(f"{logical_id!r} is not an AWS::SQS::Queue")
    properties = _Evaluator(template, resolve, parameter_overrides, pseudo_parameters).value(
        resource.get("Properties") or {}
    )
    attributes = {name: _text(properties[name]) for name in _QUEUE_ATTRIBUTES if name in properties}
    redrive = properties.get("RedrivePolicy")
    if redrive is not None:
        if not isinstance(redrive, dict):
            raise TemplateError(f"{logical_id}: RedrivePolicy must be an object")
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": redrive["deadLetterTargetArn"], "maxReceiveCount": int(redrive["maxReceiveCount"])}
        )
    return attributes


@dataclass(frozen=True)
class QueueEventSource:
    """An AWS::Lambda::EventSourceMapping from one of the template's queues to one of its functions."""

    function: str
    """The function's logical id."""
    handler: str
    queue: str
    """The queue's logical id."""
    batch_size: int
    batching_window_seconds: int
    report_batch_item_failures: bool


def sqs_event_sources(
    template: Mapping[str, Any],
    *,
    parameter_overrides: Mapping[str, Any] | None = None,
    pseudo_parameters: Mapping[str, str] | None = None,
) -> list[QueueEventSource]:
    """Every event source mapping from a queue of the template to a function of the template."""
    evaluator = _Evaluator(template, None, parameter_overrides, pseudo_parameters)
    queues = _resources_of_type(template, "AWS::SQS::Queue")
    functions = _resources_of_type(template, "AWS::Serverless::Function")
    sources = []
    for logical_id, resource in _resources_of_type(template, "AWS::Lambda::EventSourceMapping").items():
        properties = resource.get("Properties") or {}
        queue = _get_att_of(properties.get("EventSourceArn"))
        function = (
            (properties.get("FunctionName") or {}).get("Ref")
            if isinstance(properties.get("FunctionName"), dict)
            else None
        )
        if queue not in queues:
            continue  # a stream or another kind of source
        if function not in functions:
            raise TemplateError(f"{logical_id}: FunctionName must be a Ref to a function of the template")
        response_types = evaluator.value(properties.get("FunctionResponseTypes") or [])
        sources.append(
            QueueEventSource(
                function=function,
                handler=_text(functions[function]["Properties"]["Handler"]),
                queue=queue,
                batch_size=int(_text(evaluator.value(properties.get("BatchSize", 10)))),
                batching_window_seconds=int(
                    _text(evaluator.value(properties.get("MaximumBatchingWindowInSeconds", 0)))
                ),
                report_batch_item_failures="ReportBatchItemFailures" in response_types,
            )
        )
    return sources


def event_rule_queues(template: Mapping[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """(event pattern, queue logical id) for every AWS::Events::Rule target that is a queue of the
    template: where EventBridge puts a matching event (the event itself is the message body)."""
    queues = _resources_of_type(template, "AWS::SQS::Queue")
    routes = []
    for resource in _resources_of_type(template, "AWS::Events::Rule").values():
        properties = resource.get("Properties") or {}
        pattern = properties.get("EventPattern")
        if not isinstance(pattern, dict) or properties.get("State", "ENABLED") != "ENABLED":
            continue
        for target in properties.get("Targets") or []:
            queue = _get_att_of(target.get("Arn"))
            if queue in queues:
                routes.append((pattern, queue))
    return routes


def matches(pattern: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Whether an EventBridge event pattern of exact values (lists of allowed values, nested objects)
    matches `event`; any other kind of pattern raises TemplateError."""
    for key, allowed in pattern.items():
        value = event.get(key)
        if isinstance(allowed, dict):
            if not isinstance(value, dict) or not matches(allowed, value):
                return False
        elif isinstance(allowed, list) and all(isinstance(item, (str, int, float, bool)) for item in allowed):
            if value not in allowed:
                return False
        else:
            raise TemplateError(f"event pattern {key}: only lists of exact values are evaluated locally")
    return True


def _get_att_of(node: Any) -> str | None:
    """The logical id X of `{"Fn::GetAtt": [X, "Arn"]}`, else None."""
    if isinstance(node, dict) and len(node) == 1 and "Fn::GetAtt" in node:
        argument = node["Fn::GetAtt"]
        logical_id, attribute = argument if isinstance(argument, list) else str(argument).split(".", 1)
        return str(logical_id) if attribute == "Arn" else None
    return None
