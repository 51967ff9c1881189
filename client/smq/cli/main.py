"""The `smq` command: read and steer the queue the way `squeue`, `scontrol` and `scancel` do.

Exit codes: 0 done; 1 the API refused (its message on stderr) or could not be reached; 2 usage
(bad arguments, no API URL configured, an unreadable request file). Every error is one line on
stderr, never a traceback.

Each subcommand's parser sets `func(args) -> int`: the queue's own commands are in
queue_commands.py, `smq simulate` and `smq ui` register theirs. The `smq local ...` group comes from
`smq.local.cli.register_local_commands(subparsers)` when that module is importable (the `local`
extra), and follows the same rule.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from smq.argument_types import instance_preference
from smq.cli.queue_commands import (
    UsageError,
    cmd_cancel,
    cmd_costs,
    cmd_describe,
    cmd_pools,
    cmd_priority,
    cmd_quotas,
    cmd_status,
    cmd_submit,
    cmd_watch,
)
from smq.errors import ApiUrlNotFound, SmqApiError, SmqError
from smq.jobs import ALL_STATES
from smq.simulate.cli import register_simulate_command
from smq.ui.cli import register_ui_command

PROG = "smq"
EXIT_REFUSED = 1
EXIT_USAGE = 2
DEBUG_ENV = "SMQ_DEBUG"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if getattr(args, "func", None) is None:
        parser.print_usage(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except SmqApiError as exc:
        _error(f"{'refused' if exc.status < 500 else 'the API failed'} ({exc.status}): {exc}")
        return EXIT_REFUSED
    except (UsageError, ApiUrlNotFound) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except SmqError as exc:
        _error(str(exc))
        return EXIT_REFUSED
    except ModuleNotFoundError as exc:
        _error(f"{exc.name} is not installed (smq local needs: pip install 'smq-sagemaker[local]')")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        _error(f"{type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 for the traceback)")
        return EXIT_REFUSED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Read and steer the smq training-job queue.",
        parents=[_connection_options(None, main=True)],
    )
    parser.set_defaults(func=None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    connection = _connection_options(argparse.SUPPRESS, main=False)

    status = commands.add_parser("status", parents=[connection], help="the queue state table")
    _status_filters(status)
    status.add_argument("--json", action="store_true", help="print the jobs as JSON")
    status.set_defaults(func=cmd_status)

    describe = commands.add_parser("describe", parents=[connection], help="one job, its reason and attempts")
    describe.add_argument("name")
    describe.add_argument("--json", action="store_true", help="print the job as JSON")
    describe.set_defaults(func=cmd_describe)

    submit = commands.add_parser("submit", parents=[connection], help="queue a CreateTrainingJob request")
    submit.add_argument("file", help="CreateTrainingJob request as JSON ('-' reads stdin)")
    submit.add_argument("--priority", type=int, help="replaces the request's priority tag")
    submit.add_argument("--name", help="queue it under this name instead of its TrainingJobName")
    submit.add_argument(
        "--prefer", action="append", type=instance_preference, default=[], metavar="TYPE[:COUNT]",
        help="an instance type it may run on, in order of preference (repeatable; COUNT: the request's)",
    )  # fmt: skip
    submit.add_argument("--json", action="store_true", help="print the queued job as JSON")
    submit.set_defaults(func=cmd_submit)

    cancel = commands.add_parser("cancel", parents=[connection], help="cancel a job (stops a running attempt)")
    cancel.add_argument("name")
    cancel.set_defaults(func=cmd_cancel)

    priority = commands.add_parser("priority", parents=[connection], help="change a job's priority")
    priority.add_argument("name")
    priority.add_argument("priority", type=int)
    priority.set_defaults(func=cmd_priority)

    pools = commands.add_parser("pools", parents=[connection], help="capacity, in use and pending per pool")
    pools.add_argument("--json", action="store_true", help="print the pools as JSON")
    pools.set_defaults(func=cmd_pools)

    quotas = commands.add_parser(
        "quotas", parents=[connection], help="quota, in use, borrowed, lent and pending per team and pool"
    )
    quotas.add_argument("--json", action="store_true", help="print the answer of GET /quotas as JSON")
    quotas.set_defaults(func=cmd_quotas)

    costs = commands.add_parser(
        "costs", parents=[connection], help="spend, spot savings and waste per team, owner or tag"
    )
    costs.add_argument("--by", default="team", metavar="team|owner|tag:KEY", help="group by (default team)")
    costs.add_argument("--since", metavar="30d|YYYY-MM-DD", help="first UTC day counted (default: this month)")
    costs.add_argument("--json", action="store_true", help="print the answer of GET /costs as JSON")
    costs.set_defaults(func=cmd_costs)

    watch = commands.add_parser("watch", parents=[connection], help="the status table, refreshed")
    _status_filters(watch)
    watch.add_argument("--interval", type=_positive_float, default=2.0, metavar="S", help="seconds (default 2)")
    watch.add_argument("--count", type=int, metavar="N", help="stop after N refreshes (default: until Ctrl-C)")
    watch.set_defaults(func=cmd_watch)

    register_simulate_command(commands)
    register_ui_command(commands, connection)
    _register_local_commands(commands)
    return parser


def _connection_options(default: Any, *, main: bool) -> argparse.ArgumentParser:
    """Accepted before or after the subcommand; the subcommand's copy only overrides when given."""
    options = argparse.ArgumentParser(add_help=False)
    group = options.add_argument_group("connection" if main else "connection (also before COMMAND)")
    group.add_argument("--api-url", default=default, help="the smq API (default: $SMQ_API_URL)")
    group.add_argument("--stack-name", default=default, help="read the API URL from this stack (or $SMQ_STACK_NAME)")
    group.add_argument("--region", default=default, help="AWS region to sign for (default: the AWS config's)")
    return options


def _status_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true", help="include finished jobs")
    parser.add_argument(
        "--state",
        action="append",
        type=_states,
        metavar="STATE[,STATE]",
        help=f"only these states ({', '.join(ALL_STATES)}); repeatable",
    )
    parser.add_argument("--pool", help="only this pool (instance type)")
    parser.add_argument("--team", help="only the jobs whose team tag is TEAM")


def _register_local_commands(commands: Any) -> None:
    """`smq local ...` needs the `local` extra; without it the other commands still work."""
    try:
        from smq.local.cli import register_local_commands
    except ModuleNotFoundError as exc:
        missing = exc.name or "a module"
        local = commands.add_parser("local", help="the local stack (needs: pip install 'smq-sagemaker[local]')")
        local.add_argument("arguments", nargs=argparse.REMAINDER)
        local.set_defaults(func=lambda _args: _missing_extra(missing))
        return
    register_local_commands(commands)


def _missing_extra(missing: str) -> int:
    _error(f"smq local needs the 'local' extra (pip install 'smq-sagemaker[local]'): {missing} is not installed")
    return EXIT_USAGE


def _states(text: str) -> list[str]:
    states = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [state for state in states if state not in ALL_STATES]
    if unknown or not states:
        raise argparse.ArgumentTypeError(f"unknown state {', '.join(unknown) or text!r}: use {', '.join(ALL_STATES)}")
    return states


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
