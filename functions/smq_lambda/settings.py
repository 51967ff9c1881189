"""Deployment settings, read once per cold start from the environment the template sets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from smq_lambda.governance.idle import AlarmPrefix
from smq_lambda.scheduling.snapshot import UnpooledPolicy


def _csv(value: str | None) -> frozenset[str]:
    return frozenset(item.strip() for item in (value or "").split(",") if item.strip())


@dataclass(frozen=True)
class Settings:
    table_name: str
    pools_parameter: str
    unpooled: UnpooledPolicy = UnpooledPolicy.REJECT
    backfill: bool = False
    checkpoint_s3_prefix: str | None = None
    allowed_role_arns: frozenset[str] = frozenset()
    """Empty means every role is allowed (the template's PassRole scoping still applies)."""
    admin_principals: frozenset[str] = frozenset()
    """Patterns of principals that may act on any job (domain/access/principals.py)."""
    access_rules_parameter: str | None = None
    """SSM parameter of the per-principal access rules (domain/access/access.py); None: no rules."""
    scheduler_queue_url: str | None = None
    """The SQS queue the scheduler consumes; the API sends its requests for a pass there."""
    finished_ttl_days: int = 30
    max_start_refusals: int = 100
    """Transient start refusals in a row after which a job fails (see lifecycle.StartRetryLimits)."""
    max_start_refusal_hours: float = 24.0
    """Hours since a job's first start refusal in a row after which the next refusal fails it."""
    stuck_after_seconds: float = 900.0
    """A job in starting/preempting/stopping unchanged this long counts in the StuckJobs metric."""
    policy_parameter: str | None = None
    """SSM parameter of the governance policy (governance/policy.py); None: the default policy."""
    stack_policy: str | None = None
    """The policy document the stack's parameters describe, in force when no version of the policy
    parameter is valid (adapters/ssm_policy.py); None: then no policy is."""
    policy_topic_arn: str | None = None
    """SNS topic told about training jobs outside the queue that the policy stopped."""
    idle_topic_arn: str | None = None
    """SNS topic the idle-GPU alarms notify; None: no idle alarms are put."""
    idle_alarm_prefix: AlarmPrefix | None = None
    """`smq-idle-<stack name>.`; None (not set): the functions that use idle alarms refuse to start,
    so no default can make two stacks sweep each other's alarms."""
    stack_name: str | None = None
    """The CloudFormation stack's name, tagged on every attempt (`smq:stack`) so that other smq
    stacks in the account leave this one's attempts alone; None: attempts carry no stack tag."""
    region: str | None = None
    """The stack's AWS region (Lambda's AWS_REGION): the region whose shipped prices and Price List
    prices apply (adapters/price_source.py); None: no shipped prices."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Settings:
        return cls(
            table_name=env["SMQ_TABLE_NAME"],
            pools_parameter=env["SMQ_POOLS_PARAMETER"],
            unpooled=UnpooledPolicy(env.get("SMQ_UNPOOLED") or UnpooledPolicy.REJECT),
            backfill=(env.get("SMQ_BACKFILL") or "false").strip().lower() == "true",
            checkpoint_s3_prefix=env.get("SMQ_CHECKPOINT_S3_PREFIX") or None,
            allowed_role_arns=_csv(env.get("SMQ_ALLOWED_ROLE_ARNS")),
            admin_principals=_csv(env.get("SMQ_ADMIN_PRINCIPALS")),
            access_rules_parameter=env.get("SMQ_ACCESS_RULES_PARAMETER") or None,
            scheduler_queue_url=env.get("SMQ_SCHEDULER_QUEUE_URL") or None,
            finished_ttl_days=int(env.get("SMQ_FINISHED_TTL_DAYS") or 30),
            max_start_refusals=int(env.get("SMQ_MAX_START_REFUSALS") or 100),
            max_start_refusal_hours=float(env.get("SMQ_MAX_START_REFUSAL_HOURS") or 24),
            stuck_after_seconds=float(env.get("SMQ_STUCK_AFTER_SECONDS") or 900),
            policy_parameter=env.get("SMQ_POLICY_PARAMETER") or None,
            stack_policy=env.get("SMQ_STACK_POLICY") or None,
            policy_topic_arn=env.get("SMQ_POLICY_TOPIC_ARN") or None,
            idle_topic_arn=env.get("SMQ_IDLE_TOPIC_ARN") or None,
            idle_alarm_prefix=AlarmPrefix(prefix) if (prefix := env.get("SMQ_IDLE_ALARM_PREFIX")) else None,
            stack_name=env.get("SMQ_STACK_NAME") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
        )
