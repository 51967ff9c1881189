"""`smq local ...`: run the stack on this machine, inject faults into it, run the demo."""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from smq.argument_types import pool_capacity

if TYPE_CHECKING:
    from smq.local.stack import LocalStack, LocalStackOptions

DEFAULT_WORKDIR = Path(".smq-local")
FAULTS = ("interrupt", "fail", "hang")


def register_local_commands(subparsers: Any) -> None:
    local = subparsers.add_parser("local", help="run the whole stack on this machine (no AWS account)")
    commands = local.add_subparsers(dest="local_command", required=True, metavar="{up,inject,demo}")

    up = commands.add_parser("up", help="start the local stack and run until interrupted")
    up.add_argument("--port", type=int, default=8787, help="port of the API front (default 8787)")
    up.add_argument(
        "--capacity",
        action="append",
        default=[],
        metavar="TYPE=N",
        type=pool_capacity,
        help="a pool and its instances, repeatable (default ml.m5.xlarge=2)",
    )
    up.add_argument(
        "--config",
        type=Path,
        metavar="FILE.json",
        help="the queue's configuration document (pools, team quotas, preemption and aging rules) to load into "
        "the pools parameter, in place of --capacity",
    )
    up.add_argument("--executor", choices=("process", "synthetic"), default="process")
    up.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    up.add_argument(
        "--template",
        type=Path,
        metavar="FILE",
        help="the SAM template to build the stack from (default: the template.yaml smq ships)",
    )
    up.add_argument("--stop-grace", type=float, default=120.0, metavar="SECONDS", help="SIGTERM to SIGKILL")
    up.add_argument(
        "--backfill",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="let smaller jobs use instances a waiting head cannot (default on)",
    )
    up.add_argument("--verbose", action="store_true", help="print the handlers' logs and metrics")
    up.add_argument(
        "--policy",
        type=_policy,
        metavar="FILE.json",
        help="the governance policy document to load into the policy parameter (default: the template's)",
    )
    up.add_argument(
        "--alarm-period-seconds",
        type=_positive_seconds,
        metavar="N",
        help="evaluate the idle-GPU alarms over N-second periods instead of their own (the policy's "
        "idle.period_seconds, 300 by default), so an idle job is stopped within seconds",
    )
    up.add_argument(
        "--stack-name",
        default="smq",
        metavar="NAME",
        help="the stack's name (AWS::StackName; default smq): two stacks sharing a SageMaker need two names",
    )
    up.add_argument(
        "--sagemaker-url",
        metavar="URL",
        help="share the local SageMaker service of another local stack (its `smq local up` prints the URL) "
        "instead of starting one, as two stacks in one account share SageMaker",
    )
    up.add_argument(
        "--reconcile-every",
        type=_positive_seconds,
        default=30,
        metavar="SECONDS",
        help="how often the scheduler reconciles with SageMaker (default 30)",
    )
    up.set_defaults(func=_up)

    inject = commands.add_parser("inject", help="inject a fault into a running job of the local stack")
    inject.add_argument("fault", choices=FAULTS)
    inject.add_argument("job", help="queue job name or SageMaker training job name")
    inject.add_argument(
        "--reason",
        metavar="TEXT",
        help="fail only: the FailureReason SageMaker reports (default: an InternalServerError, which the "
        "queue retries; e.g. 'AlgorithmError: ...' for a failure of the training code, which it does not)",
    )
    inject.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    inject.set_defaults(func=_inject)

    demo = commands.add_parser("demo", help="the seed scenario: four jobs, capacity 2, one preemption")
    demo.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR / "demo")
    demo.add_argument("--executor", choices=("process", "synthetic"), default="process")
    demo.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="skip the warm-up round that teaches the queue how long the scenario's jobs take",
    )
    demo.set_defaults(func=_demo)


def _positive_seconds(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of seconds >= 1, got {text!r}")
    return int(text)


def _policy(path: str) -> dict[str, Any]:
    """The policy document in `path`, checked as the functions will check it, so a mistake is
    reported now rather than logged by every function later."""
    from smq_lambda.governance.policy import PolicyError, parse_policy

    try:
        document = json.loads(Path(path).read_text())
        parse_policy(document)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{path} is not valid JSON: {exc}") from exc
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(f"{path}: {exc}") from exc
    return document


class _StopRequested(BaseException):
    """Raised in the main thread by the first SIGINT or SIGTERM, wherever `smq local up` is: a start
    in progress is unwound (stopping what it started) as surely as the wait once it is up."""


STUCK_STOP_MARGIN_SECONDS = 60.0
"""How much longer than the jobs' stop grace a clean stop may take before it counts as stuck."""


def _stop_on_signals(stuck_after: float) -> None:
    """The first signal stops the stack cleanly; a second, while it stops, ends the process at once.
    A stop still going after `stuck_after` seconds is stuck: every thread's stack goes to stderr
    (where it is stuck, for a bug report) and the process ends with status 1 instead of hanging."""

    def force(signum: int, _frame: FrameType | None) -> None:
        os._exit(128 + signum)

    def stop(_signum: int, _frame: FrameType | None) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, force)
        faulthandler.dump_traceback_later(stuck_after, exit=True)
        raise _StopRequested

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)


class _ConfigRefused(Exception):
    """`--config` names no valid configuration document, or comes with --capacity."""


def _config(args: argparse.Namespace) -> dict[str, Any] | None:
    """The document of --config, checked by the rules the functions will apply to it, so that a
    mistake is reported now rather than refused by every function later."""
    from smq_lambda.domain.config.config_document import parse_config_document
    from smq_lambda.errors import ConfigError

    path: Path | None = args.config
    if path is None:
        return None
    if args.capacity:
        raise _ConfigRefused(f"--config {path} gives the pools; leave out --capacity (or put the pools in the file)")
    try:
        document: dict[str, Any] = json.loads(path.read_text())
        for warning in parse_config_document(document, source=str(path)).warnings:
            print(f"warning: {path}: {warning}", file=sys.stderr)
    except OSError as exc:
        raise _ConfigRefused(f"cannot read the configuration {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # JSONDecodeError
        raise _ConfigRefused(f"{path} is not valid JSON: {exc}") from None
    except ConfigError as exc:
        raise _ConfigRefused(str(exc)) from None
    return document


def _up(args: argparse.Namespace) -> int:
    """Exit 0 once stopped by a signal; a failed start raises StackStartError (one line, exit 1); a
    bad --config is one line on stderr and exit 2, before anything starts."""
    from smq.local.stack import TEMPLATE, LocalStack, LocalStackOptions

    try:
        config = _config(args)
    except _ConfigRefused as exc:
        print(f"smq local up: {exc}", file=sys.stderr)
        return 2
    options = LocalStackOptions(
        capacity=dict(args.capacity) or {"ml.m5.xlarge": 2},
        config=config,
        executor=args.executor,
        workdir=args.workdir,
        api_port=args.port,
        stop_grace_seconds=args.stop_grace,
        backfill=args.backfill,
        verbose=args.verbose,
        policy=args.policy,
        alarm_period_seconds=args.alarm_period_seconds,
        template=args.template or TEMPLATE,
        stack_name=args.stack_name,
        sagemaker_url=args.sagemaker_url,
        reconcile_every_seconds=args.reconcile_every,
    )
    _stop_on_signals(stuck_after=args.stop_grace + STUCK_STOP_MARGIN_SECONDS)
    with contextlib.suppress(_StopRequested), LocalStack(options) as stack:
        _print_up(stack)
        threading.Event().wait()
    return 0


def _print_up(stack: LocalStack) -> None:
    from smq.local.stack import SESSION_TOKEN_VARIABLES
    from smq.ui.cli import DEFAULT_PORT

    options = stack.options
    print(f"smq local stack is up: API {stack.api_url}")
    print(f"pools: {json.dumps(_pools(options))}  executor: {options.executor}  workdir: {stack.workdir}")
    print("In another shell:")
    print(f"  unset {' '.join(SESSION_TOKEN_VARIABLES)}")
    for key, value in sorted(stack.client_env.items()):
        print(f"  export {key}={value}")
    print(f"  smq ui    # the queue in a browser on port {DEFAULT_PORT}: open the address it prints")
    print("Press Ctrl-C to stop (jobs get SIGTERM, then the servers stop; press it again to force).", flush=True)


def _pools(options: LocalStackOptions) -> dict[str, int]:
    if options.config is None:
        return dict(options.capacity)
    from smq_lambda.domain.config.config_document import parse_config_document

    return dict(parse_config_document(options.config, source="--config").pools)


def _inject(args: argparse.Namespace) -> int:
    from smq.local.sagemaker import FaultRejected, request_fault
    from smq.local.stack import read_state, training_job_for

    try:
        state = read_state(args.workdir)
    except FileNotFoundError as exc:
        raise SystemExit(f"smq: {exc}") from None
    training_job = training_job_for(state["api_url"], args.job)
    try:
        request_fault(state["sagemaker_url"], training_job, args.fault, args.reason)
    except FaultRejected as exc:
        raise SystemExit(f"smq: could not inject {args.fault} into {training_job}: {exc}") from None
    print(f"injected {args.fault} into {training_job}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from smq.local.demo import run_demo

    return run_demo(workdir=args.workdir, executor=args.executor, warm_up=args.warm_up)
