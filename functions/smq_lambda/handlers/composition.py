"""The composition root of the deployed functions: the one place that builds every port from the
environment the template sets, once per cold start (each builder is cached; the local stack clears
them for a new stack), and registers the scheduler's training-end listeners.

The adapters are imported inside the builders, on a function's first invocation, not when a handler
module is imported: a cold start pays only for what its function uses. The boto3 clients are shared
(aws_clients.py), except the Price List's, whose endpoint's region is not the stack's.

The training-end listeners, in the order they are told of an attempt's end (the same cost records
and price source serve them and the passes, which read the month's spend back to hold jobs by
budget):

1. the cost recorder (service/cost_recorder.py), which prices the attempt;
2. the budget warnings (service/budget_warnings.py), which read what the recorder wrote;
3. the duration recorder and 4. the warm pool keeper, which the scheduler adds for its duration and
   warm pool stores (`SchedulerPorts.listeners`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING

from smq_lambda.errors import ConfigError
from smq_lambda.handlers.aws_clients import client
from smq_lambda.settings import Settings

if TYPE_CHECKING:
    from smq_lambda.adapters.price_list import SageMakerPriceList
    from smq_lambda.adapters.price_source import DynamoRefreshedPrices
    from smq_lambda.adapters.sns_notifier import SnsNotifier
    from smq_lambda.adapters.ssm_policy import SsmPolicySource
    from smq_lambda.governance.idle import AlarmPrefix
    from smq_lambda.governance.policy import Policy
    from smq_lambda.ports import ConfigSource, CostRecords, PriceSource, TrainingEndListener, TrainingService
    from smq_lambda.service.cost_reports import CostReports
    from smq_lambda.service.idle_stop import IdleStop
    from smq_lambda.service.idle_watch import IdleWatch
    from smq_lambda.service.outside_jobs import OutsideJobs
    from smq_lambda.service.queue_api import QueueService
    from smq_lambda.service.scheduler import Scheduler


def now() -> datetime:
    return datetime.now(UTC)


@cache
def default_scheduler() -> Scheduler:
    """The scheduler function's use cases over the stack's table, SageMaker, SSM and topics."""
    from aws_lambda_powertools.utilities.parameters import SSMProvider

    from smq_lambda.adapters.dynamodb_costs import DynamoCostRecords
    from smq_lambda.adapters.dynamodb_durations import DynamoDurationStore
    from smq_lambda.adapters.dynamodb_lease import DynamoPassLease
    from smq_lambda.adapters.dynamodb_pass_summaries import DynamoPassSummaries
    from smq_lambda.adapters.dynamodb_spot_rates import DynamoSpotInterruptionBook
    from smq_lambda.adapters.dynamodb_store import DynamoJobStore
    from smq_lambda.adapters.dynamodb_team_usage import DynamoTeamUsageHistory
    from smq_lambda.adapters.dynamodb_warm_pools import DynamoWarmPools
    from smq_lambda.adapters.price_source import stack_price_source
    from smq_lambda.adapters.sagemaker import SageMakerTrainingService
    from smq_lambda.adapters.ssm_config import SsmConfigSource
    from smq_lambda.domain.jobs.lifecycle import StartRetryLimits
    from smq_lambda.service.scheduler import Scheduler, SchedulerPorts

    settings = Settings.from_env()
    dynamodb = client("dynamodb")
    training = SageMakerTrainingService(client("sagemaker"), stack=settings.stack_name)
    config = SsmConfigSource(settings, SSMProvider(boto3_client=client("ssm")))
    records = DynamoCostRecords(settings.table_name, dynamodb)
    prices = stack_price_source(settings, config, dynamodb)
    return Scheduler(
        SchedulerPorts(
            store=DynamoJobStore(settings.table_name, dynamodb, ttl_days=settings.finished_ttl_days),
            training=training,
            config=config,
            lease=DynamoPassLease(settings.table_name, dynamodb),
            clock=now,
            pass_summaries=DynamoPassSummaries(settings.table_name, dynamodb),
            retry_limits=StartRetryLimits(
                max_refusals=settings.max_start_refusals,
                max_duration=timedelta(hours=settings.max_start_refusal_hours),
            ),
            stuck_after=timedelta(seconds=settings.stuck_after_seconds),
            policy=default_policy(),
            idle_watch=idle_watch(settings),
            team_usage=DynamoTeamUsageHistory(settings.table_name, dynamodb),
            notifier=notifier(settings),
            stack=settings.stack_name,
            training_end_listeners=cost_listeners(settings, config, training, records, prices),
            durations=DynamoDurationStore(settings.table_name, dynamodb),
            cost_records=records,
            prices=prices,
            spot_interruptions=DynamoSpotInterruptionBook(settings.table_name, dynamodb),
            warm_pools=DynamoWarmPools(settings.table_name, dynamodb),
        )
    )


def cost_listeners(
    settings: Settings, config: ConfigSource, training: TrainingService, records: CostRecords, prices: PriceSource
) -> tuple[TrainingEndListener, ...]:
    """Listeners 1 and 2 of the module docstring: the cost recorder, then the budget warnings."""
    from smq_lambda.adapters.dynamodb_budget_marks import DynamoBudgetWarningMarks
    from smq_lambda.service.budget_warnings import BudgetWarnings
    from smq_lambda.service.cost_recorder import CostRecorder

    recorder = CostRecorder(
        records=records, prices=prices, config=config, clock=now, training=training, policy=default_policy()
    )
    marks = DynamoBudgetWarningMarks(settings.table_name, client("dynamodb"))
    return recorder, BudgetWarnings(config, records, marks, notifier(settings), now)


def notifier(settings: Settings) -> SnsNotifier | None:
    """The notifications topic's publisher; None when no topic is configured."""
    if not settings.policy_topic_arn:
        return None
    from smq_lambda.adapters.sns_notifier import SnsNotifier

    return SnsNotifier(settings.policy_topic_arn, client("sns"))


def idle_watch(settings: Settings) -> IdleWatch | None:
    """None without an idle topic: no idle alarms are put."""
    if not settings.idle_topic_arn:
        return None
    from smq_lambda.adapters.cloudwatch_alarms import CloudWatchIdleAlarms
    from smq_lambda.service.idle_watch import IdleWatch

    prefix = idle_alarm_prefix(settings)
    return IdleWatch(CloudWatchIdleAlarms(client("cloudwatch"), prefix), settings.idle_topic_arn, prefix)


def idle_alarm_prefix(settings: Settings) -> AlarmPrefix:
    """Required wherever idle alarms are put, listed or acted on: with no prefix there is no telling
    this stack's alarms from another's, and a sweep under the bare `smq-idle-` would delete them."""
    if settings.idle_alarm_prefix is None:
        raise ConfigError("SMQ_IDLE_ALARM_PREFIX is not set: the idle alarms of this stack cannot be told apart")
    return settings.idle_alarm_prefix


class _DefaultPolicy:
    """No policy parameter configured: the default policy (no required tag, no limit)."""

    def load(self) -> Policy:
        from smq_lambda.governance.policy import Policy

        return Policy()


@cache
def default_policy() -> SsmPolicySource | _DefaultPolicy:
    """The policy source the scheduler, `outside_jobs`, the cost recorder and the idle stop read:
    one cache, one report of an invalid document per cold start."""
    settings = Settings.from_env()
    if not settings.policy_parameter:
        return _DefaultPolicy()
    from aws_lambda_powertools.utilities.parameters import SSMProvider

    from smq_lambda.adapters.ssm_policy import SsmPolicySource

    return SsmPolicySource(settings.policy_parameter, SSMProvider(boto3_client=client("ssm")), settings.stack_policy)


@cache
def default_outside_jobs() -> OutsideJobs:
    """The governance of training jobs outside the queue."""
    from smq_lambda.adapters.dynamodb_store import DynamoJobStore
    from smq_lambda.adapters.sagemaker import SageMakerTrainingService
    from smq_lambda.service.outside_jobs import OutsideJobs

    settings = Settings.from_env()
    return OutsideJobs(
        store=DynamoJobStore(settings.table_name, client("dynamodb"), ttl_days=settings.finished_ttl_days),
        training=SageMakerTrainingService(client("sagemaker"), stack=settings.stack_name),
        policy=default_policy(),
        notifier=notifier(settings),
        clock=now,
        stack=settings.stack_name,
    )


@cache
def default_idle_stop() -> IdleStop:
    """The idle-stop function's use case."""
    from smq_lambda.adapters.cloudwatch_alarms import CloudWatchIdleAlarms
    from smq_lambda.adapters.dynamodb_store import DynamoJobStore
    from smq_lambda.adapters.sagemaker import SageMakerTrainingService
    from smq_lambda.service.idle_stop import IdleStop

    settings = Settings.from_env()
    prefix = idle_alarm_prefix(settings)
    return IdleStop(
        store=DynamoJobStore(settings.table_name, client("dynamodb"), ttl_days=settings.finished_ttl_days),
        training=SageMakerTrainingService(client("sagemaker")),
        alarms=CloudWatchIdleAlarms(client("cloudwatch"), prefix),
        policy=default_policy(),
        clock=now,
        prefix=prefix,
        notifier=notifier(settings),
    )


def api_services(settings: Settings) -> tuple[QueueService, CostReports]:
    """The API function's services; each client finds its endpoint the standard boto3 way
    (`AWS_ENDPOINT_URL_<SERVICE>` included)."""
    import boto3
    from aws_lambda_powertools.utilities.parameters import SSMProvider

    from smq_lambda.adapters.dynamodb_costs import DynamoCostRecords
    from smq_lambda.adapters.dynamodb_pass_summaries import DynamoPassSummaries
    from smq_lambda.adapters.dynamodb_store import DynamoJobStore
    from smq_lambda.adapters.price_source import stack_price_source
    from smq_lambda.adapters.sqs_trigger import SqsSchedulerTrigger
    from smq_lambda.adapters.ssm_access_rules import SsmAccessRules
    from smq_lambda.adapters.ssm_config import SsmConfigSource
    from smq_lambda.adapters.ssm_policy import SsmPolicySource
    from smq_lambda.service.cost_reports import CostReports
    from smq_lambda.service.queue_api import QueueService
    from smq_lambda.service.submission import SubmissionPolicy

    if not settings.scheduler_queue_url:
        raise ConfigError("SMQ_SCHEDULER_QUEUE_URL is not set: the API could not ask for scheduling passes")
    dynamodb = boto3.client("dynamodb")
    ssm = SSMProvider(boto3_client=boto3.client("ssm"))
    store = DynamoJobStore(settings.table_name, dynamodb, ttl_days=settings.finished_ttl_days)
    config = SsmConfigSource(settings, ssm)
    prices = stack_price_source(settings, config, dynamodb)
    access_rules = SsmAccessRules(settings.access_rules_parameter, ssm) if settings.access_rules_parameter else None
    service = QueueService(
        store=store,
        config=config,
        trigger=SqsSchedulerTrigger(settings.scheduler_queue_url, boto3.client("sqs")),
        policy=SubmissionPolicy.from_settings(settings),
        admin_principals=settings.admin_principals,
        access_rules=access_rules,
        pass_summaries=DynamoPassSummaries(settings.table_name, dynamodb),
        governance=SsmPolicySource.from_settings(settings, ssm),
        prices=prices,
    )
    costs = CostReports(
        DynamoCostRecords(settings.table_name, dynamodb),
        store,
        config,
        prices,
        admin_principals=settings.admin_principals,
        access_rules=access_rules,
    )
    return service, costs


@cache
def default_refresh() -> tuple[SageMakerPriceList, DynamoRefreshedPrices, str]:
    """The price refresh function's Price List, the `#prices` item and the stack's region."""
    import boto3

    from smq_lambda.adapters.price_list import PRICING_ENDPOINT, SageMakerPriceList
    from smq_lambda.adapters.price_source import DynamoRefreshedPrices

    settings = Settings.from_env()
    if settings.region is None:
        raise ConfigError("AWS_REGION is not set: the price refresh does not know which region to price")
    price_list = SageMakerPriceList(boto3.client("pricing", region_name=PRICING_ENDPOINT))
    return price_list, DynamoRefreshedPrices(settings.table_name, client("dynamodb")), settings.region
