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

This module starts and stops the parts, in order; beside it: stack_options.py (the options and
names), stack_resources.py (the template's resources in moto), stack_functions.py (the handlers in
this process and their environment), stack_triggers.py (the schedule, queues and topics that invoke
them), stack_moto.py (the moto server and its endpoints), stack_state.py (the state file other
processes read).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import yaml

from smq.local.alarm_evaluator import AlarmEvaluator
from smq.local.api_front import ApiFront
from smq.local.event_bus import EventBus
from smq.local.sagemaker import LocalSageMaker, PhaseTimings
from smq.local.stack_functions import InProcessFunctions, api_handler, as_function
from smq.local.stack_moto import LocalMoto
from smq.local.stack_options import (
    ACCOUNT,
    API_FUNCTION_ID,
    BUCKET,
    LOG_GROUP,
    MOTO_SERVICES,
    REGION,
    REPOSITORY,
    TEMPLATE,
    LocalStackOptions,
    StackStartError,
)
from smq.local.stack_resources import StackResources
from smq.local.stack_roles import ADMIN_USER, StackIdentities
from smq.local.stack_state import STATE_FILE, read_state, training_job_for, write_state
from smq.local.stack_triggers import FunctionTriggers
from smq.local.template import TemplateError, load_template

__all__ = [
    "REGION",
    "REPOSITORY",
    "STATE_FILE",
    "TEMPLATE",
    "LocalStack",
    "LocalStackOptions",
    "StackStartError",
    "client_environment",
    "read_state",
    "training_job_for",
]

log = logging.getLogger("smq.local")
_RUNNING = threading.Lock()
"""One stack per process: moto's backends and the handlers' environment are process-wide."""


class LocalStack:
    """Start with `with LocalStack(options) as stack:`; `stack.client_env` is what a client needs."""

    def __init__(self, options: LocalStackOptions | None = None) -> None:
        self.options = options or LocalStackOptions()
        self.workdir = Path(self.options.workdir).resolve()
        self._resources: StackResources | None = None
        """The template's resources, once the template is read."""
        self._functions = InProcessFunctions()
        self._moto: LocalMoto | None = None
        self._identities: StackIdentities | None = None
        """The admin and the functions' roles, once moto is up (stack_roles.py)."""
        self._sagemaker: LocalSageMaker | None = None
        self._triggers: FunctionTriggers | None = None
        self._bus: EventBus | None = None
        self._alarms: AlarmEvaluator | None = None
        self._api: ApiFront | None = None
        self._holds_process = False
        self._state_file: Path | None = None
        """Set once this stack wrote it: a stack that failed to start leaves another's in place."""
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
            resources = self._resources = StackResources(self._read_template(), self.options, self.boto3_client)
            self._api = self._bind_api()
            moto = self._start_moto()
            resources.create()
            self._enforce_iam(moto, resources)
            self._bus = EventBus(lambda: self.boto3_client("sqs"), resources.event_routes(), chaos=self.options.chaos)
            self._bus.start()
            self.aws_env["AWS_ENDPOINT_URL_SAGEMAKER"] = self._start_sagemaker(self._bus)
            self._triggers = FunctionTriggers(resources, self._functions, self.boto3_client, self.options)
            self._triggers.subscribe()
            environment = {**resources.functions_environment(), **self.aws_env}
            self._functions.enter_environment(environment, verbose=self.options.verbose)
            self._api.start()
            self._triggers.start()
            self._alarms = AlarmEvaluator(
                self.boto3_client("cloudwatch"),
                self.boto3_client("sns"),
                name_prefix=self.idle_alarm_prefix,
                period_seconds=self.options.alarm_period_seconds,
                region=REGION,
                account=ACCOUNT,
            )
            self._alarms.start()
            # Named before it is written: a signal that lands between the write and the assignment
            # would otherwise leave the file behind a stopped stack.
            self._state_file = self.workdir / STATE_FILE
            write_state(self.workdir, self.api_url, self.sagemaker_url, self.client_env)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop what invokes the functions first (the alarm evaluator, the queues' pollers and the
        routers, the local EventBridge), then every job process, then every server (each thread
        joined); restore the environment.

        In that order no function reacts to the jobs being stopped: a pass run then would call a
        SageMaker endpoint that is going away, retrying each call, and hold the stop for minutes.
        """
        if self._alarms is not None:
            self._alarms.shutdown()
        if self._triggers is not None:
            self._triggers.shutdown()
        if self._bus is not None:
            self._bus.shutdown()
        if self._sagemaker is not None:
            self._sagemaker.shutdown()
        if self._api is not None:
            self._api.shutdown()
        if self._identities is not None:
            self._identities.restore()
        if self._moto is not None:
            self._moto.stop()
        self._sagemaker = self._triggers = self._alarms = self._api = self._moto = self._bus = None
        self._identities = None
        self._functions.leave_environment()
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
        """A client of the stack's emulators with the admin's keys (the stack's own principal)."""
        suffix = MOTO_SERVICES.get(service, service.upper())
        endpoint = self.aws_env.get(f"AWS_ENDPOINT_URL_{suffix}")
        return boto3.client(
            service,
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id=self.aws_env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.aws_env["AWS_SECRET_ACCESS_KEY"],
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

    def queue_url(self, logical_id: str) -> str:
        """The URL of one of the template's SQS queues in the local SQS (moto)."""
        return self._template_resources.queue(logical_id)[0]

    def topic_arn(self, logical_id: str) -> str:
        """The ARN of one of the template's SNS topics in the local SNS (moto)."""
        return self._template_resources.topic_arn(logical_id)

    @property
    def policy_parameter(self) -> str:
        """The SSM parameter of the governance policy, as the template names it."""
        return self._template_resources.policy_parameter

    @property
    def idle_alarm_prefix(self) -> str:
        """The SMQ_IDLE_ALARM_PREFIX the template gives the idle-stop function: every idle alarm of
        this stack is named with it."""
        return self._template_resources.idle_alarm_prefix

    # ------------------------------------------------------------------ internals

    @property
    def _template_resources(self) -> StackResources:
        assert self._resources is not None, "the stack has not read its template"
        return self._resources

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
            return ApiFront(as_function(API_FUNCTION_ID, api_handler), port=port)
        except OSError as exc:
            problem = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
            raise StackStartError(
                f"port {port} on 127.0.0.1 {problem}; pass --port N (0 picks a free one) or stop what holds it"
            ) from exc

    def _start_moto(self) -> LocalMoto:
        """Held before it starts, so a stop after a failed reset still stops the server."""
        moto = self._moto = LocalMoto()
        moto.start()
        self.aws_env = moto.aws_environment()
        return moto

    def _enforce_iam(self, moto: LocalMoto, resources: StackResources) -> None:
        """Each function's role and the admin user, made while moto checks nothing; then moto checks
        every call, and the stack, its users and clients use the admin's keys (stack_roles.py)."""
        self._identities = StackIdentities(moto.url, self.boto3_client)
        self._identities.create(resources.function_policies())
        self.aws_env.update(self._identities.admin_keys)
        if self._api is not None:
            self._api.users[self._identities.admin_keys["AWS_ACCESS_KEY_ID"]] = ADMIN_USER
        self._identities.enforce()

    def _start_sagemaker(self, bus: EventBus) -> str:
        """This stack's local SageMaker, whose events go to `bus`; or, with `sagemaker_url`, another
        local stack's, shared as one account's SageMaker is (not stopped with this stack)."""
        if self.options.sagemaker_url is not None:
            return self.options.sagemaker_url
        self._sagemaker = LocalSageMaker(
            workdir=self.workdir,
            on_event=bus.publish,
            stop_grace_seconds=self.options.stop_grace_seconds,
            executor=self.options.executor,
            aws_env=self.aws_env,
            region=REGION,
            account_id=ACCOUNT,
            timings=self._timings(),
        )
        self._sagemaker.start()
        return self._sagemaker.url

    def _timings(self) -> PhaseTimings:
        """Training jobs report GPU utilization at least twice per alarm period, so every period of
        a training job has a datapoint: a period without one never counts as idle, and a gap would
        only delay an idle job's stop."""
        timings = self.options.phase_timings
        period = self.options.alarm_period_seconds
        if period is None:
            return timings
        return replace(timings, metric_interval=min(timings.metric_interval, period / 2))

    def _quiet_libraries(self) -> None:
        level = logging.INFO if self.options.verbose else logging.WARNING
        for name in ("smq", "werkzeug", "botocore", "urllib3"):
            logging.getLogger(name).setLevel(level)


SESSION_TOKEN_VARIABLES = ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")


@contextmanager
def client_environment(stack: LocalStack) -> Iterator[None]:
    """Point this process's AWS and smq clients at the stack for the duration of the block. A session
    token from the environment goes too: beside the stack's keys it would make them temporary
    credentials that moto's IAM check refuses."""
    saved = {key: os.environ.get(key) for key in (*stack.client_env, *SESSION_TOKEN_VARIABLES)}
    for key in SESSION_TOKEN_VARIABLES:
        os.environ.pop(key, None)
    os.environ.update(stack.client_env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
