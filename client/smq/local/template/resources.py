"""The template's queue table, SSM parameters and functions (their environment, policies and SNS
subscriptions), in the shapes the local stack creates them with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smq.local.template.intrinsics import NO_VALUE, Evaluator, Resolver, as_text, resources_of_type
from smq.local.template.loader import TemplateError

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
    tables = resources_of_type(template, "AWS::DynamoDB::Table")
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
    evaluator = Evaluator(template, resolve, parameter_overrides, pseudo_parameters)
    environment: dict[str, str] = {}
    for name, node in {**global_variables, **own_variables}.items():
        value = evaluator.value(node)
        if value is not NO_VALUE:
            environment[name] = as_text(value)
    return environment


def function_policies(
    template: Mapping[str, Any],
    function_logical_id: str,
    resolve: Resolver,
    *,
    parameter_overrides: Mapping[str, Any] | None = None,
    pseudo_parameters: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The policy documents of a function's `Policies`, evaluated: the inline policies SAM gives the
    role it creates for the function. A SAM policy template or a managed policy raises TemplateError:
    the local stack could not enforce what it does not read."""
    resource = resources_of_type(template, "AWS::Serverless::Function").get(function_logical_id)
    if resource is None:
        raise TemplateError(f"{function_logical_id!r} is not an AWS::Serverless::Function")
    evaluator = Evaluator(template, resolve, parameter_overrides, pseudo_parameters)
    documents = []
    for policy in (resource.get("Properties") or {}).get("Policies") or []:
        if not isinstance(policy, dict) or "Statement" not in policy:
            raise TemplateError(f"{function_logical_id}: only inline policy documents are read, not {policy!r}")
        document = evaluator.value(policy)
        statements = document["Statement"]
        document["Statement"] = statements if isinstance(statements, list) else [statements]
        documents.append({"Version": "2012-10-17", **document})
    return documents


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
    evaluator = Evaluator(template, resolve, parameter_overrides, pseudo_parameters)
    subscriptions = []
    for logical_id, resource in resources_of_type(template, "AWS::Serverless::Function").items():
        properties = resource.get("Properties") or {}
        for event in (properties.get("Events") or {}).values():
            if event.get("Type") == "SNS":
                topic = as_text(evaluator.value(event["Properties"]["Topic"]))
                subscriptions.append((logical_id, as_text(properties["Handler"]), topic))
    return subscriptions


def ssm_parameters(
    template: Mapping[str, Any],
    parameter_overrides: Mapping[str, Any] | None = None,
    *,
    pseudo_parameters: Mapping[str, str] | None = None,
) -> list[tuple[str, str]]:
    """(name, value) of every AWS::SSM::Parameter the template creates, in template order."""
    evaluator = Evaluator(template, None, parameter_overrides, pseudo_parameters)
    parameters = []
    for logical_id, resource in resources_of_type(template, "AWS::SSM::Parameter").items():
        properties = resource.get("Properties") or {}
        if "Name" not in properties:
            raise TemplateError(f"SSM parameter {logical_id} has no Name; the local stack needs one")
        parameters.append((as_text(evaluator.value(properties["Name"])), as_text(evaluator.value(properties["Value"]))))
    return parameters
