"""What a local stack is started with (LocalStackOptions) and the names it gives what it creates:
the region and account, the table, the bucket, the functions, the emulators' endpoints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smq.errors import SmqError
from smq.local.event_router import Chaos
from smq.local.sagemaker.runtime import PhaseTimings

REPOSITORY = Path(__file__).resolve().parents[3]
TEMPLATE = Path(__file__).with_name("template.yaml")
"""Shipped in the package; in a clone, a link to the repository's template.yaml (the one source)."""
REGION = "us-east-1"
ACCOUNT = "000000000000"
TABLE_NAME = "smq-queue"
BUCKET = "smq-local"
SCHEDULER_FUNCTION = "smq-scheduler"
API_FUNCTION = "smq-api"
POLICY_PARAMETER = "PolicyParameter"
"""The template's logical id of the governance policy parameter (`--policy` overwrites its value)."""
IDLE_STOP_FUNCTION = "IdleStopFunction"
"""The template's logical id of the function that acts on the idle alarms the evaluator evaluates."""
API_FUNCTION_ID = "ApiFunction"
"""The template's logical id of the API function (the local API front invokes it)."""
SCHEDULER_FUNCTION_ID = "SchedulerFunction"
"""The template's logical id of the scheduler (the reconciliation schedule invokes it)."""
MOTO_SERVICES = {
    "dynamodb": "DYNAMODB",
    "s3": "S3",
    "ssm": "SSM",
    "cloudwatch": "CLOUDWATCH",
    "logs": "CLOUDWATCH_LOGS",
    "sns": "SNS",
    "sqs": "SQS",
    "sts": "STS",
    "iam": "IAM",
    "cloudformation": "CLOUDFORMATION",
}
"""boto3 service name → the suffix of the `AWS_ENDPOINT_URL_<SUFFIX>` variable boto3 reads for it."""
LOG_GROUP = "/aws/sagemaker/TrainingJobs"


@dataclass
class LocalStackOptions:
    capacity: Mapping[str, int] = field(default_factory=lambda: {"ml.m5.xlarge": 2})
    config: Mapping[str, Any] | None = None
    """The queue's configuration document (domain/config/config_document.py: pools, team quotas,
    preemption and aging rules) written to the pools parameter in place of `capacity`."""
    executor: str = "process"
    workdir: Path = Path(".smq-local")
    api_port: int = 0
    stop_grace_seconds: float = 120.0
    unpooled: str = "reject"
    backfill: bool = True
    reconcile_every_seconds: float | None = 30.0
    chaos: Chaos | None = None
    """Misdelivery of the SageMaker state changes on their way to the scheduler queue."""
    queue_visibility_timeout_seconds: int = 2
    """The visibility timeout of the queues a function consumes, in place of the template's (18
    minutes for the scheduler queue): a message the function failed is received again this soon."""
    admin_principals: tuple[str, ...] = ()
    template: Path = TEMPLATE
    verbose: bool = False
    policy: Mapping[str, Any] | None = None
    """The governance policy document (governance/policy.py) written to the policy parameter in
    place of the one the template builds from its parameters' defaults."""
    alarm_period_seconds: int | None = None
    """The period the local alarm evaluator reads metrics over, in place of each alarm's own (the
    policy's `idle.period_seconds`), so an idle job is stopped in seconds; None: the alarm's own."""
    stack_name: str = "smq"
    """The stack's name (`AWS::StackName`): names the idle alarms and tags every attempt (`smq:stack`)."""
    sagemaker_url: str | None = None
    """The local SageMaker service of another local stack to share, as two stacks share one account's
    SageMaker; None: start one. A shared service sends its state-change events to its own stack
    only, so this stack learns of training jobs through reconciliation."""
    phase_timings: PhaseTimings = field(default_factory=PhaseTimings)
    """How long the local SageMaker service's jobs spend starting, downloading and uploading."""


class StackStartError(SmqError):
    """The stack could not start; the message says what failed and what to do about it."""
