"""The template's SQS queues, the functions that consume them (event source mappings) and the
EventBridge rules that put events on them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from smq.local.template.intrinsics import Evaluator, Resolver, as_text, resources_of_type
from smq.local.template.loader import TemplateError

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
    queues = resources_of_type(template, "AWS::SQS::Queue")
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
    resource = resources_of_type(template, "AWS::SQS::Queue").get(logical_id)
    if resource is None:
        raise TemplateError(f"{logical_id!r} is not an AWS::SQS::Queue")
    properties = Evaluator(template, resolve, parameter_overrides, pseudo_parameters).value(
        resource.get("Properties") or {}
    )
    attributes = {name: as_text(properties[name]) for name in _QUEUE_ATTRIBUTES if name in properties}
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
    evaluator = Evaluator(template, None, parameter_overrides, pseudo_parameters)
    queues = resources_of_type(template, "AWS::SQS::Queue")
    functions = resources_of_type(template, "AWS::Serverless::Function")
    sources = []
    for logical_id, resource in resources_of_type(template, "AWS::Lambda::EventSourceMapping").items():
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
                handler=as_text(functions[function]["Properties"]["Handler"]),
                queue=queue,
                batch_size=int(as_text(evaluator.value(properties.get("BatchSize", 10)))),
                batching_window_seconds=int(
                    as_text(evaluator.value(properties.get("MaximumBatchingWindowInSeconds", 0)))
                ),
                report_batch_item_failures="ReportBatchItemFailures" in response_types,
            )
        )
    return sources


def event_rule_queues(template: Mapping[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """(event pattern, queue logical id) for every AWS::Events::Rule target that is a queue of the
    template: where EventBridge puts a matching event (the event itself is the message body)."""
    queues = resources_of_type(template, "AWS::SQS::Queue")
    routes = []
    for resource in resources_of_type(template, "AWS::Events::Rule").values():
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
