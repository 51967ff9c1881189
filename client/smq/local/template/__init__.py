"""Read template.yaml so that the local stack builds what CloudFormation would build.

The template is the single source of truth for the queue table, the SSM parameters, the queues,
what EventBridge puts on them and which function consumes them, and the functions' environment; the
local stack derives all of it from here instead of repeating it.
Only the intrinsic functions those parts can use are evaluated; anything else raises TemplateError
rather than silently producing a value CloudFormation would not.

    loader.py      the YAML with CloudFormation's short-form tags
    intrinsics.py  Ref, Fn::Sub, Fn::If, ... and the conditions
    resources.py   the table, the SSM parameters, a function's environment and policies, the SNS
                   subscriptions
    queues.py      the SQS queues, the event source mappings, the EventBridge rules and their patterns
"""

from __future__ import annotations

from smq.local.template.intrinsics import PSEUDO_PARAMETERS, Resolver, evaluate
from smq.local.template.loader import TemplateError, load_template
from smq.local.template.queues import (
    QueueEventSource,
    event_rule_queues,
    matches,
    sqs_event_sources,
    sqs_queue_attributes,
    sqs_queues,
)
from smq.local.template.resources import (
    function_environment,
    function_policies,
    sns_subscriptions,
    ssm_parameters,
    table_definition,
)

__all__ = [
    "PSEUDO_PARAMETERS",
    "QueueEventSource",
    "Resolver",
    "TemplateError",
    "evaluate",
    "event_rule_queues",
    "function_environment",
    "function_policies",
    "load_template",
    "matches",
    "sns_subscriptions",
    "sqs_event_sources",
    "sqs_queue_attributes",
    "sqs_queues",
    "ssm_parameters",
    "table_definition",
]
