"""The whole smq stack on one machine: moto, the local SageMaker service, the API front, the local
EventBridge, the queues' event sources, the event routers, the alarm evaluator, and the same handler
code that runs in Lambda.

Resources come from template.yaml (the table, the SSM parameters, the SNS topics and the functions
subscribed to them, the SQS queues, the rules that put events on them and the functions that consume
them), so the template stays the single source of truth. The handlers find the emulators only
through the standard `AWS_ENDPOINT_URL_<SERVICE>` variables; they do not know they are local.

    local SageMaker ─ event ─> EventBus (the template's rule) ─┐
    API handler ─ kick: boto3 sqs.send_message ───────────────┴─> moto SQS: SchedulerQueue
        ─> SqsEventSource (batches) ─┐
    EventRouter (reconcile ticks) ───┴─> scheduler handler, one invocation at a time
"""

from __future__ import annotations

import errno
import importlib
import json
import logging
import os
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import boto3
import requests
import yaml
from moto.server import ThreadedMotoServer

from smq.api_client import SmqApiClient
from smq.errors import JobNotFound, SmqError
from smq.local.alarm_evaluator import AlarmEvaluator
from smq.local.api_front import ApiFront
from smq.local.atomic_dynamodb import make_moto_dynamodb_atomic
from smq.local.event_bus import EventBus
from smq.local.event_router import SNS_PATH, Chaos, EventRouter, Handler
from smq.local.sagemaker import LocalSageMaker, PhaseTimings
from smq.local.sqs_event_source import SqsEventSource
from smq.local.template import (
    QueueEventSource,
    TemplateError,
    evaluate,
    event_rule_queues,
    function_environment,
    load_template,
    sns_subscriptions,
    sqs_event_sources,
    sqs_queue_attributes,
    sqs_queues,
    ssm_parameters,
    table_definition,
)

REPOSITORY = Path(__file__).resolve().parents[3]
TEMPLATE = Path(__file__).with_name("template.yaml")
"""Shipped in the package; in a clone, a link to the repository's template.yaml (the one source)."""
MOTO_START_SECONDS = 30.0
"""moto's own start waits without limit for a server that may never come up."""
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
    "cloudformation": "CLOUDFORMATION",
}
"""boto3 service name → the suffix of the `AWS_ENDPOINT_URL_<SUFFIX>` variable boto3 reads for it."""
LOG_GROUP = "/aws/sagemaker/TrainingJobs"
STATE_FILE = "stack.json"
"""Written into the workdir while the stack runs, so `smq local inject` and clients can find it."""

log = logging.getLogger("smq.local")
_RUNNING = threading.Lock()
"""One stack per process: moto's backends and the handlers' environment are process-wide."""


@dataclass
class LocalStackOptions:
    capacity: Mapping[str, int] = field(default_factory=lambda: {"ml.m5.xlarge": 2})
    config: Mapping[str, Any] | None = None
    """The queue's configuration document (domain/config_document.py: pools, team quotas,
    preemption and aging rules) written to the pools parameter in place of `capacity`."""
    executor: str = "process"
    workdir: Path = Path(".smq-local")
    api_port: int = 0
    stop_grace_seconds: float = 120.0
    unpooled: str = "reject"
    backfill: bool = False
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


class StackStartError(SmqError):
    """The stack could not start; the message says what failed and what to do about it."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalStack:
    """Start with `with LocalStack(options) as stack:`; `stack.client_env` is what a client needs."""

    def __init__(self, options: LocalStackOptions | None = None) -> None:
        self.options = options or LocalStackOptions()
        self.workdir = Path(self.options.workdir).resolve()
        self._template: dict[str, Any] = {}
        self._moto: ThreadedMotoServer | None = None
        self._sagemaker: LocalSageMaker | None = None
        self._router: EventRouter | None = None
        """Invokes the scheduler with the reconciliation schedule's events."""
        self._subscribers: list[EventRouter] = []
        """One router per function the template subscribes to an SNS topic."""
        self._bus: EventBus | None = None
        self._event_sources: list[SqsEventSource] = []
        """One poller per queue a function of the template consumes."""
        self._queues: dict[str, tuple[str, str, str]] = {}
        """The template's SQS queues (logical id) and their URL, ARN and name in moto."""
        self._function_locks: dict[str, threading.Lock] = {}
        """One per function: its event sources and routers never run it twice at once."""
        self._alarms: AlarmEvaluator | None = None
        self._api: ApiFront | None = None
        self._saved_environ: dict[str, str | None] = {}
        self._holds_process = False
        self._state_file: Path | None = None
        """Set once this stack wrote it: a stack that failed to start leaves another's in place."""
        self._topics: dict[str, str] = {}
        """The template's SNS topics (logical id) and their ARNs in moto."""
        self.aws_env: dict[str, str] = {}

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        if not _RUNNING.acquire(blocking=False):
            raise RuntimeError("a local stack is already running in this process; stop it first")
        self._holds_process = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._quiet_libraries()
        try:
            self._template = self._read_template()
            self._api = self._bind_api()
            self._start_moto()
            self._provision()
            self._bus = EventBus(lambda: self.boto3_client("sqs"), self._event_routes(), chaos=self.options.chaos)
            self._bus.start()
            self._sagemaker = LocalSageMaker(
                workdir=self.workdir,
                on_event=self._bus.publish,
                stop_grace_seconds=self.options.stop_grace_seconds,
                executor=self.options.executor,
                aws_env=self.aws_env,
                region=REGION,
                account_id=ACCOUNT,
                timings=self._timings(),
            )
            self._sagemaker.start()
            self.aws_env["AWS_ENDPOINT_URL_SAGEMAKER"] = self._sagemaker.url
            self._subscribe_functions()
            self._enter_function_environment()
            self._api.start()
            self._router = EventRouter(
                self._function_handler(SCHEDULER_FUNCTION_ID),
                function_name=SCHEDULER_FUNCTION,
                reconcile_every_seconds=self.options.reconcile_every_seconds,
            )
            self._router.start()
            self._start_event_sources()
            for subscriber in self._subscribers:
                subscriber.start()
            self._alarms = AlarmEvaluator(
                self.boto3_client("cloudwatch"),
                self.boto3_client("sns"),
                name_prefix=self.idle_alarm_prefix,
                period_seconds=self.options.alarm_period_seconds,
                region=REGION,
                account=ACCOUNT,
            )
            self._alarms.start()
            self._write_state_file()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every job process, then the alarm evaluator (which notifies the routers), then the
        local EventBridge, the queues' pollers, the routers and every server (each thread joined);
        restore the environment."""
        if self._sagemaker is not None:
            self._sagemaker.shutdown()
        if self._alarms is not None:
            self._alarms.shutdown()
        if self._bus is not None:
            self._bus.shutdown()
        for source in self._event_sources:
            source.shutdown()
        for router in [self._router, *self._subscribers]:
            if router is not None:
                router.shutdown()
        if self._api is not None:
            self._api.shutdown()
        if self._moto is not None:
            self._moto.stop()
        self._sagemaker = self._router = self._alarms = self._api = self._moto = self._bus = None
        self._subscribers = []
        self._event_sources = []
        self._queues = {}
        self._leave_function_environment()
        if self._state_file is not None:
            self._state_file.unlink(missing_ok=True)
            self._state_file = None
        if self._holds_process:
            self._holds_process = False
            _RUNNING.release()

    # ------------------------------------------------------------------ what clients use

    @property
    def api_url(self) -> str:
        assert self._api is not None, "the stack is not running"
        return self._api.url

    @property
    def sagemaker_url(self) -> str:
        return self.aws_env["AWS_ENDPOINT_URL_SAGEMAKER"]

    @property
    def bucket(self) -> str:
        return BUCKET

    @property
    def client_env(self) -> dict[str, str]:
        """The environment a client process needs: the API URL, the endpoints, region, dummy keys."""
        return {"SMQ_API_URL": self.api_url, **self.aws_env}

    def boto3_client(self, service: str) -> Any:
        suffix = MOTO_SERVICES.get(service, service.upper())
        endpoint = self.aws_env.get(f"AWS_ENDPOINT_URL_{suffix}")
        return boto3.client(
            service,
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def inject(self, job: str, fault: str, reason: str | None = None) -> str:
        """Inject a fault into a running attempt (`reason`: the FailureReason of a `fail`). `job` is
        a queue job or a SageMaker job name; returns the SageMaker name it hit."""
        training_job = training_job_for(self.api_url, job)
        assert self._sagemaker is not None, "the stack is not running"
        self._sagemaker.inject(training_job, fault, reason)
        return training_job

    def training_logs(self, training_job_name: str) -> str:
        """Everything a training job wrote to CloudWatch Logs, oldest first."""
        logs = self.boto3_client("logs")
        try:
            streams = logs.describe_log_streams(logGroupName=LOG_GROUP, logStreamNamePrefix=training_job_name)
        except logs.exceptions.ResourceNotFoundException:
            return ""
        lines: list[str] = []
        for stream in streams["logStreams"]:
            token = None
            while True:
                page = logs.get_log_events(
                    logGroupName=LOG_GROUP,
                    logStreamName=stream["logStreamName"],
                    startFromHead=True,
                    **({"nextToken": token} if token else {}),
                )
                lines.extend(event["message"] for event in page["events"])
                if not page["events"] or page.get("nextForwardToken") == token:
                    break
                token = page.get("nextForwardToken")
        return "\n".join(lines)

    # ------------------------------------------------------------------ internals

    def _read_template(self) -> dict[str, Any]:
        """Read first: a missing or broken template fails the start before anything runs."""
        path = self.options.template
        remedy = "reinstall smq-sagemaker[local]" if path == TEMPLATE else "check --template"
        try:
            return load_template(path)
        except FileNotFoundError:
            raise StackStartError(f"no template at {path}; {remedy}") from None
        except (OSError, yaml.YAMLError, TemplateError) as exc:
            reason = " ".join(str(exc).split())
            raise StackStartError(f"cannot read the template {path} ({reason}); {remedy}") from exc

    def _bind_api(self) -> ApiFront:
        """Bound before anything else starts, so a port in use fails the stack at once."""
        port = self.options.api_port
        try:
            return ApiFront(self._api_handler, port=port)
        except OSError as exc:
            problem = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
            raise StackStartError(
                f"port {port} on 127.0.0.1 {problem}; pass --port N (0 picks a free one) or stop what holds it"
            ) from exc

    def _start_moto(self) -> None:
        make_moto_dynamodb_atomic()
        port = _free_port()
        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        starter = threading.Thread(target=moto.start, name="smq-moto-start", daemon=True)
        starter.start()
        starter.join(MOTO_START_SECONDS)
        if starter.is_alive():
            raise StackStartError(f"moto did not come up on 127.0.0.1:{port} in {MOTO_START_SECONDS:g} s; try again")
        self._moto = moto
        moto_url = f"http://127.0.0.1:{port}"
        requests.post(f"{moto_url}/moto-api/reset", timeout=10).raise_for_status()
        self.aws_env = {f"AWS_ENDPOINT_URL_{suffix}": moto_url for suffix in MOTO_SERVICES.values()}
        self.aws_env.update(
            {
                "AWS_DEFAULT_REGION": REGION,
                "AWS_REGION": REGION,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
            }
        )

    def _parameter_overrides(self) -> dict[str, str]:
        pools = self.options.capacity if self.options.config is None else self.options.config
        return {
            "CapacityPools": json.dumps(dict(pools)),
            "UnpooledInstanceTypes": self.options.unpooled,
            "Backfill": "true" if self.options.backfill else "false",
            "CheckpointS3Prefix": f"s3://{BUCKET}/checkpoints",
            "AllowedRoleArns": "",
            "AdminPrincipals": ",".join(self.options.admin_principals),
        }

    def _provision(self) -> None:
        """Create what the template declares, in the emulators."""
        template = self._template
        definition = table_definition(template, table_name=TABLE_NAME)
        ttl = definition.pop("TimeToLiveSpecification", None)
        dynamodb = self.boto3_client("dynamodb")
        dynamodb.create_table(**definition)
        if ttl:
            dynamodb.update_time_to_live(TableName=TABLE_NAME, TimeToLiveSpecification=ttl)
        ssm = self.boto3_client("ssm")
        for name, value in ssm_parameters(template, self._parameter_overrides(), pseudo_parameters=self._pseudo()):
            ssm.put_parameter(Name=name, Value=value, Type="String", Overwrite=True)
        if self.options.policy is not None:
            ssm.put_parameter(Name=self.policy_parameter, Value=json.dumps(self.options.policy), Overwrite=True)
        sns = self.boto3_client("sns")
        for logical_id, resource in (template.get("Resources") or {}).items():
            if resource.get("Type") == "AWS::SNS::Topic":
                self._topics[logical_id] = sns.create_topic(Name=f"smq-{logical_id}")["TopicArn"]
        self._create_queues()
        self.boto3_client("s3").create_bucket(Bucket=BUCKET)

    def _create_queues(self) -> None:
        """The template's queues, each dead-letter queue first (a RedrivePolicy names its ARN); a
        queue a function consumes gets the local visibility timeout."""
        sqs = self.boto3_client("sqs")
        consumed = {source.queue for source in self._event_source_definitions()}
        for logical_id in sqs_queues(self._template):
            attributes = sqs_queue_attributes(
                self._template,
                logical_id,
                self._resolve,
                parameter_overrides=self._parameter_overrides(),
                pseudo_parameters=self._pseudo(),
            )
            if logical_id in consumed:
                attributes["VisibilityTimeout"] = str(self.options.queue_visibility_timeout_seconds)
            name = f"smq-{logical_id}"
            url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            self._queues[logical_id] = (url, arn, name)

    def _event_source_definitions(self) -> list[QueueEventSource]:
        return sqs_event_sources(
            self._template, parameter_overrides=self._parameter_overrides(), pseudo_parameters=self._pseudo()
        )

    def _event_routes(self) -> list[tuple[dict[str, Any], str]]:
        """Where the template's rules put the local SageMaker service's events: (pattern, queue URL)."""
        return [(pattern, self.queue_url(queue)) for pattern, queue in event_rule_queues(self._template)]

    def _start_event_sources(self) -> None:
        """One poller per event source mapping from a queue to a function, as Lambda's."""
        for source in self._event_source_definitions():
            url, arn, _ = self._queues[source.queue]
            function_name = SCHEDULER_FUNCTION if source.function == SCHEDULER_FUNCTION_ID else f"smq-{source.function}"
            poller = SqsEventSource(
                lambda: self.boto3_client("sqs"),
                url,
                arn,
                self._function_handler(source.function),
                function_name=function_name,
                batch_size=source.batch_size,
                batching_window_seconds=source.batching_window_seconds,
                visibility_timeout_seconds=self.options.queue_visibility_timeout_seconds,
                region=REGION,
            )
            self._event_sources.append(poller)
            poller.start()

    def _function_handler(self, function: str) -> Handler:
        """The Handler the template names for `function`, never run twice at once: everything that
        invokes one function (its queue's poller, a router) takes the same lock."""
        handler = (self._template["Resources"][function].get("Properties") or {})["Handler"]
        invoke = _template_handler(str(handler))
        lock = self._function_locks.setdefault(function, threading.Lock())

        def serialized(event: dict[str, Any], context: Any) -> Any:
            with lock:
                return invoke(event, context)

        return serialized

    def queue_url(self, logical_id: str) -> str:
        """The URL of one of the template's SQS queues in the local SQS (moto)."""
        return self._queues[logical_id][0]

    def _subscribe_functions(self) -> None:
        """Subscribe each function the template subscribes to an SNS topic, through a router of its
        own: moto's SNS posts every notification to the router, which invokes the function."""
        sns = self.boto3_client("sns")
        subscriptions = sns_subscriptions(
            self._template,
            self._resolve,
            parameter_overrides=self._parameter_overrides(),
            pseudo_parameters=self._pseudo(),
        )
        for function, handler, topic_arn in subscriptions:
            router = EventRouter(
                _template_handler(handler), function_name=f"smq-{function}", reconcile_every_seconds=None
            )
            self._subscribers.append(router)
            sns.subscribe(TopicArn=topic_arn, Protocol="http", Endpoint=f"{router.url}{SNS_PATH}")

    def _timings(self) -> PhaseTimings:
        """Training jobs report GPU utilization at least twice per alarm period, so every period of
        a training job has a datapoint: a period without one never counts as idle, and a gap would
        only delay an idle job's stop."""
        timings = PhaseTimings()
        period = self.options.alarm_period_seconds
        if period is None:
            return timings
        return replace(timings, metric_interval=min(timings.metric_interval, period / 2))

    @property
    def policy_parameter(self) -> str:
        """The SSM parameter of the governance policy, as the template names it."""
        resource = (self._template.get("Resources") or {}).get(POLICY_PARAMETER) or {}
        name = (resource.get("Properties") or {}).get("Name")
        return str(evaluate(self._template, name, pseudo_parameters=self._pseudo()))

    @property
    def idle_alarm_prefix(self) -> str:
        """The SMQ_IDLE_ALARM_PREFIX the template gives the idle-stop function: every idle alarm of
        this stack is named with it."""
        environment = function_environment(
            self._template,
            IDLE_STOP_FUNCTION,
            self._resolve,
            parameter_overrides=self._parameter_overrides(),
            pseudo_parameters=self._pseudo(),
        )
        return environment["SMQ_IDLE_ALARM_PREFIX"]

    def topic_arn(self, logical_id: str) -> str:
        """The ARN of one of the template's SNS topics in the local SNS (moto)."""
        return self._topics[logical_id]

    def _pseudo(self) -> dict[str, str]:
        return {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws", "AWS::StackName": "smq"}

    def _resolve(self, logical_id: str, attribute: str | None) -> str:
        names = {"QueueTable": TABLE_NAME, "SchedulerFunction": SCHEDULER_FUNCTION, "ApiFunction": API_FUNCTION}
        resource = (self._template.get("Resources") or {}).get(logical_id) or {}
        if resource.get("Type") == "AWS::SNS::Topic" and attribute in (None, "TopicArn"):
            return self.topic_arn(logical_id)
        if resource.get("Type") == "AWS::SQS::Queue" and logical_id in self._queues:
            url, arn, name = self._queues[logical_id]
            return {None: url, "QueueUrl": url, "Arn": arn, "QueueName": name}[attribute]
        if logical_id in names:
            name = names[logical_id]
            if attribute == "Arn":
                kind = "table" if logical_id == "QueueTable" else "function"
                service = "dynamodb" if kind == "table" else "lambda"
                return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{kind}{'/' if kind == 'table' else ':'}{name}"
            return name
        if attribute == "Arn" or attribute is None:
            return f"arn:aws:local:{REGION}:{ACCOUNT}:{logical_id}"
        return logical_id

    def _enter_function_environment(self) -> None:
        """Every handler runs in this process, so their environment is this process's."""
        overrides = self._parameter_overrides()
        environment: dict[str, str] = {}
        functions = [
            logical_id
            for logical_id, resource in (self._template.get("Resources") or {}).items()
            if resource.get("Type") == "AWS::Serverless::Function"
        ]
        for function in functions:
            environment.update(
                function_environment(
                    self._template,
                    function,
                    self._resolve,
                    parameter_overrides=overrides,
                    pseudo_parameters=self._pseudo(),
                )
            )
        environment.update(self.aws_env)
        if not self.options.verbose:
            environment["POWERTOOLS_METRICS_DISABLED"] = "true"
            environment["POWERTOOLS_LOG_LEVEL"] = "WARNING"
        for key, value in environment.items():
            self._saved_environ.setdefault(key, os.environ.get(key))
            os.environ[key] = value
        _reset_handler_caches()

    def _leave_function_environment(self) -> None:
        for key, value in self._saved_environ.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_environ.clear()
        _reset_handler_caches()

    def _quiet_libraries(self) -> None:
        level = logging.INFO if self.options.verbose else logging.WARNING
        for name in ("smq", "werkzeug", "botocore", "urllib3"):
            logging.getLogger(name).setLevel(level)

    @staticmethod
    def _api_handler(event: dict[str, Any], context: Any) -> Any:
        from smq_lambda.handlers import api

        return api.handler(event, context)

    def _write_state_file(self) -> None:
        state = {
            "api_url": self.api_url,
            "sagemaker_url": self.sagemaker_url,
            "env": self.client_env,
            "pid": os.getpid(),
        }
        self._state_file = self.workdir / STATE_FILE
        self._state_file.write_text(json.dumps(state, indent=2))


def _template_handler(handler: str) -> Handler:
    """The function a template's `Handler` names, imported when it is first invoked (as Lambda
    imports it at a cold start)."""
    module, _, name = handler.rpartition(".")

    def invoke(event: dict[str, Any], context: Any) -> Any:
        return getattr(importlib.import_module(module), name)(event, context)

    return invoke


def _reset_handler_caches() -> None:
    """Handlers build their clients once per cold start; a new stack is a new cold start."""
    from smq_lambda.handlers import api, aws_clients, idle, scheduler

    aws_clients.client.cache_clear()
    scheduler.default_scheduler.cache_clear()
    scheduler.default_outside_jobs.cache_clear()
    scheduler.default_policy.cache_clear()
    idle.default_idle_stop.cache_clear()
    api.default_app.cache_clear()


def training_job_for(api_url: str, job: str) -> str:
    """The SageMaker name of a queue job's latest attempt; other names are taken as they are."""
    try:
        name = SmqApiClient(api_url, region=REGION).get_job(job).get("training_job_name")
    except JobNotFound:
        return job
    return str(name or job)


def read_state(workdir: Path) -> dict[str, Any]:
    """The running stack's URLs and client environment, as `smq local up` wrote them."""
    path = Path(workdir) / STATE_FILE
    if not path.exists():
        raise FileNotFoundError(f"no local stack is running with workdir {workdir} (run `smq local up`)")
    return json.loads(path.read_text())


@contextmanager
def client_environment(stack: LocalStack) -> Iterator[None]:
    """Point this process's AWS and smq clients at the stack for the duration of the block."""
    saved = {key: os.environ.get(key) for key in stack.client_env}
    os.environ.update(stack.client_env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
