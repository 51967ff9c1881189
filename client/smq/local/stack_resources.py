"""What template.yaml declares, created in the emulators (moto): the queue table, the SSM
parameters, the SNS topics, the SQS queues and the bucket; and the template's references to them
(Ref, Fn::GetAtt) resolved to what was created, for the functions' environment and their triggers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from smq.local.stack_options import (
    ACCOUNT,
    API_FUNCTION,
    BUCKET,
    IDLE_STOP_FUNCTION,
    POLICY_PARAMETER,
    REGION,
    SCHEDULER_FUNCTION,
    TABLE_NAME,
    LocalStackOptions,
)
from smq.local.template import (
    QueueEventSource,
    evaluate,
    event_rule_queues,
    function_environment,
    function_policies,
    sns_subscriptions,
    sqs_event_sources,
    sqs_queue_attributes,
    sqs_queues,
    ssm_parameters,
    table_definition,
)

PSEUDO_PARAMETERS = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws", "AWS::StackName": "smq"}
LOCAL_NAMES = {"QueueTable": TABLE_NAME, "SchedulerFunction": SCHEDULER_FUNCTION, "ApiFunction": API_FUNCTION}
"""The names the local stack gives the template's table and the functions clients name."""


class StackResources:
    """`create()` makes the template's resources with `client(service)` (a boto3 client of moto)."""

    def __init__(self, template: dict[str, Any], options: LocalStackOptions, client: Callable[[str], Any]) -> None:
        self.template = template
        self._options = options
        self._client = client
        self.pseudo_parameters = {**PSEUDO_PARAMETERS, "AWS::StackName": options.stack_name}
        """What the template's pseudo parameters resolve to: this stack's name for `AWS::StackName`."""
        self._queues: dict[str, tuple[str, str, str]] = {}
        """The template's SQS queues (logical id) and their URL, ARN and name in moto."""
        self._topics: dict[str, str] = {}
        """The template's SNS topics (logical id) and their ARNs in moto."""

    def create(self) -> None:
        """Create what the template declares, in the emulators."""
        template = self.template
        definition = table_definition(template, table_name=TABLE_NAME)
        ttl = definition.pop("TimeToLiveSpecification", None)
        dynamodb = self._client("dynamodb")
        dynamodb.create_table(**definition)
        if ttl:
            dynamodb.update_time_to_live(TableName=TABLE_NAME, TimeToLiveSpecification=ttl)
        ssm = self._client("ssm")
        parameters = ssm_parameters(template, self.parameter_overrides(), pseudo_parameters=self.pseudo_parameters)
        for name, value in parameters:
            ssm.put_parameter(Name=name, Value=value, Type="String", Overwrite=True)
        if self._options.policy is not None:
            ssm.put_parameter(Name=self.policy_parameter, Value=json.dumps(self._options.policy), Overwrite=True)
        sns = self._client("sns")
        for logical_id, resource in (template.get("Resources") or {}).items():
            if resource.get("Type") == "AWS::SNS::Topic":
                self._topics[logical_id] = sns.create_topic(Name=f"smq-{logical_id}")["TopicArn"]
        self._create_queues()
        self._client("s3").create_bucket(Bucket=BUCKET)

    def _create_queues(self) -> None:
        """The template's queues, each dead-letter queue first (a RedrivePolicy names its ARN); a
        queue a function consumes gets the local visibility timeout."""
        sqs = self._client("sqs")
        consumed = {source.queue for source in self.event_sources()}
        for logical_id in sqs_queues(self.template):
            attributes = sqs_queue_attributes(
                self.template,
                logical_id,
                self.resolve,
                parameter_overrides=self.parameter_overrides(),
                pseudo_parameters=self.pseudo_parameters,
            )
            if logical_id in consumed:
                attributes["VisibilityTimeout"] = str(self._options.queue_visibility_timeout_seconds)
            name = f"smq-{logical_id}"
            url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            self._queues[logical_id] = (url, arn, name)

    def parameter_overrides(self) -> dict[str, str]:
        options = self._options
        pools = options.capacity if options.config is None else options.config
        return {
            "CapacityPools": json.dumps(dict(pools)),
            "UnpooledInstanceTypes": options.unpooled,
            "Backfill": "true" if options.backfill else "false",
            "CheckpointS3Prefix": f"s3://{BUCKET}/checkpoints",
            "AllowedRoleArns": "",
            "AdminPrincipals": ",".join(options.admin_principals),
        }

    def resolve(self, logical_id: str, attribute: str | None) -> str:
        """A resource's Ref (attribute None) or Fn::GetAtt, as the local stack made it."""
        resource = (self.template.get("Resources") or {}).get(logical_id) or {}
        if resource.get("Type") == "AWS::SNS::Topic" and attribute in (None, "TopicArn"):
            return self.topic_arn(logical_id)
        if resource.get("Type") == "AWS::SQS::Queue" and logical_id in self._queues:
            url, arn, name = self._queues[logical_id]
            return {None: url, "QueueUrl": url, "Arn": arn, "QueueName": name}[attribute]
        if logical_id in LOCAL_NAMES:
            name = LOCAL_NAMES[logical_id]
            if attribute == "Arn":
                kind = "table" if logical_id == "QueueTable" else "function"
                service = "dynamodb" if kind == "table" else "lambda"
                return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{kind}{'/' if kind == 'table' else ':'}{name}"
            return name
        if attribute == "Arn" or attribute is None:
            return f"arn:aws:local:{REGION}:{ACCOUNT}:{logical_id}"
        return logical_id

    def queue(self, logical_id: str) -> tuple[str, str, str]:
        """The URL, ARN and name of one of the template's SQS queues in the local SQS (moto)."""
        return self._queues[logical_id]

    def topic_arn(self, logical_id: str) -> str:
        """The ARN of one of the template's SNS topics in the local SNS (moto)."""
        return self._topics[logical_id]

    def event_sources(self) -> list[QueueEventSource]:
        """The template's event source mappings from a queue to a function."""
        return sqs_event_sources(
            self.template, parameter_overrides=self.parameter_overrides(), pseudo_parameters=self.pseudo_parameters
        )

    def event_routes(self) -> list[tuple[dict[str, Any], str]]:
        """Where the template's rules put the local SageMaker service's events: (pattern, queue URL)."""
        return [(pattern, self.queue(queue)[0]) for pattern, queue in event_rule_queues(self.template)]

    def sns_subscriptions(self) -> list[tuple[str, str, str]]:
        """(function logical id, its Handler, topic ARN) for each function subscribed to a topic."""
        return sns_subscriptions(
            self.template,
            self.resolve,
            parameter_overrides=self.parameter_overrides(),
            pseudo_parameters=self.pseudo_parameters,
        )

    def handler(self, function: str) -> str:
        """The `Handler` the template gives the function `function` (a logical id)."""
        return str((self.template["Resources"][function].get("Properties") or {})["Handler"])

    def function_environment(self, function: str) -> dict[str, str]:
        """The environment the template gives one function."""
        return function_environment(
            self.template,
            function,
            self.resolve,
            parameter_overrides=self.parameter_overrides(),
            pseudo_parameters=self.pseudo_parameters,
        )

    def function_policies(self) -> dict[str, list[dict[str, Any]]]:
        """Each function's `Policies` (logical id → policy documents), for the role it runs with."""
        return {
            logical_id: function_policies(
                self.template,
                logical_id,
                self.resolve,
                parameter_overrides=self.parameter_overrides(),
                pseudo_parameters=self.pseudo_parameters,
            )
            for logical_id, resource in (self.template.get("Resources") or {}).items()
            if resource.get("Type") == "AWS::Serverless::Function"
        }

    def functions_environment(self) -> dict[str, str]:
        """Every function's environment in one (they all run in one process)."""
        environment: dict[str, str] = {}
        for logical_id, resource in (self.template.get("Resources") or {}).items():
            if resource.get("Type") == "AWS::Serverless::Function":
                environment.update(self.function_environment(logical_id))
        return environment

    @property
    def policy_parameter(self) -> str:
        """The SSM parameter of the governance policy, as the template names it."""
        resource = (self.template.get("Resources") or {}).get(POLICY_PARAMETER) or {}
        name = (resource.get("Properties") or {}).get("Name")
        return str(evaluate(self.template, name, pseudo_parameters=self.pseudo_parameters))

    @property
    def idle_alarm_prefix(self) -> str:
        """The SMQ_IDLE_ALARM_PREFIX the template gives the idle-stop function: every idle alarm of
        this stack is named with it."""
        return self.function_environment(IDLE_STOP_FUNCTION)["SMQ_IDLE_ALARM_PREFIX"]
