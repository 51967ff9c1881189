"""The `smq` command: read and steer the queue the way `squeue`, `scontrol` and `scancel` do.

Exit codes: 0 done; 1 the API refused (its message on stderr) or could not be reached; 2 usage
(bad arguments, no API URL configured, an unreadable request file). Every error is one line on
stderr, never a traceback.

Each subcommand's parser sets `func(args) -> int`. The `smq local ...` group comes from
`smq.local.cli.register_local_commands(subparsers)` when that module is importable (the `local`
extra), and follows the same rule.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import boto3

from smq.api_client import SmqApiClient
from smq.argument_types import instance_preference
from smq.errors import ApiUnreachable, ApiUrlNotFound, SmqApiError, SmqError
from smq.formatting import (
    costs_footer,
    costs_table,
    describe_text,
    first_estimate_line,
    pools_table,
    quotas_table,
    status_table,
)
from smq.jobs import ALL_STATES, check_priority, now_utc, queued_message, with_preferences, with_priority
from smq.simulate.cli import register_simulate_command
from smq.start_estimates import await_first_estimate
from smq.ui.cli import register_ui_command

PROG = "smq"
EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
CLEAR_SCREEN = "\x1b[H\x1b[2J"
DEBUG_ENV = "SMQ_DEBUG"


class UsageError(SmqError):
    """The command line or a file it names is wrong: exit 2."""


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


# ---------------------------------------------------------------------- commands


def cmd_status(args: argparse.Namespace) -> int:
    jobs = _listed(_client(args), args)
    if args.json:
        _print_json(jobs)
    elif jobs:
        print(status_table(jobs, now_utc()))
    elif args.team is not None:
        print(f"No {'' if args.all or args.state else 'active '}jobs of team {args.team!r}.")
    else:
        print("No jobs." if args.all or args.state else "No active jobs (smq status --all shows finished ones).")
    return EXIT_OK


def cmd_describe(args: argparse.Namespace) -> int:
    client = _client(args)
    job = client.get_job(args.name)
    if args.json:
        _print_json(job)
        return EXIT_OK
    print(describe_text(job, now_utc()))
    return EXIT_OK


def cmd_submit(args: argparse.Namespace) -> int:
    request = _read_request(args.file)
    if args.name:
        request["TrainingJobName"] = args.name
    if args.priority is not None:
        try:
            check_priority(args.priority)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    client = _client(args)
    job = client.add_job(with_preferences(with_priority(request, args.priority, replace=True), args.prefer))
    if args.json:
        _print_json(job)
        return EXIT_OK
    print(queued_message(job, request))
    seen = await_first_estimate(client.get_job, job)
    line = first_estimate_line(seen, now_utc()) if seen is not None else None
    if line is not None:
        print(line)
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    job = _client(args).cancel_job(args.name)
    if job["state"] == "stopping":
        print(f"Job {job['name']}: stopping (SageMaker job {job.get('training_job_name')} is being stopped)")
    else:
        print(f"Job {job['name']}: {job['state']}")
    return EXIT_OK


def cmd_priority(args: argparse.Namespace) -> int:
    job = _client(args).update_priority(args.name, args.priority)
    where = f", position {job['position']} in {job['pool']}" if job.get("position") else ""
    print(f"Job {job['name']}: priority {job['priority']} ({job['state']}{where})")
    return EXIT_OK


def cmd_pools(args: argparse.Namespace) -> int:
    pools = _client(args).list_pools()
    if args.json:
        _print_json(pools)
    elif pools:
        print(pools_table(pools))
    else:
        print("No pools configured.")
    return EXIT_OK


def cmd_quotas(args: argparse.Namespace) -> int:
    quotas = _client(args).get_quotas()
    if args.json:
        _print_json(quotas)
    elif quotas.get("teams"):
        print(quotas_table(quotas["teams"]))
        measured = quotas.get("measured_at")
        print(f"\nTeams by the tag {quotas.get('team_tag')!r}; in use as measured {measured or 'now'}.")
    else:
        print("No team quotas configured.")
    return EXIT_OK


def cmd_costs(args: argparse.Namespace) -> int:
    report = _client(args).get_costs(args.by, args.since)
    if args.json:
        _print_json(report)
        return EXIT_OK
    since = str(report.get("since") or "")[:10]
    if not report.get("groups"):
        print(f"No spend since {since} (UTC) and nothing running.")
        return EXIT_OK
    print(costs_table(report))
    print(f"\n{costs_footer(report)}")
    return EXIT_OK


def cmd_watch(
    args: argparse.Namespace,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Redraw the status table every `--interval` seconds until Ctrl-C (or `--count` redraws).

    An unreachable API is shown and retried; a refusal ends the watch (it would not change).
    """
    client = _client(args)
    interactive = sys.stdout.isatty()
    refreshes = 0
    try:
        while args.count is None or refreshes < args.count:
            if refreshes:
                sleep(args.interval)
            try:
                jobs = _listed(client, args)
                body = status_table(jobs, now_utc()) if jobs else "No jobs."
            except ApiUnreachable as exc:
                body = f"smq: {exc}"
            header = f"Every {args.interval:g}s: smq status    {now_utc():%Y-%m-%d %H:%M:%SZ}"
            print((CLEAR_SCREEN if interactive else "") + header + "\n\n" + body, flush=True)
            refreshes += 1
    except KeyboardInterrupt:
        print()
    return EXIT_OK


# ---------------------------------------------------------------------- helpers


def _client(args: argparse.Namespace) -> SmqApiClient:
    return SmqApiClient(
        args.api_url,
        stack_name=args.stack_name,
        region=args.region,
        boto_session=boto3.Session(region_name=args.region),
    )


def _listed(client: SmqApiClient, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The jobs `smq status` and `smq watch` show. GET /jobs has no team filter, so `--team`
    filters the jobs it lists here, by each job's `team`."""
    jobs = client.list_jobs(_state_filter(args), pool=args.pool)
    return jobs if args.team is None else [job for job in jobs if job.get("team") == args.team]


def _state_filter(args: argparse.Namespace) -> str | list[str] | None:
    if args.all:
        return "all"
    if args.state:
        return [state for group in args.state for state in group]
    return None


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


def _read_request(path: str) -> dict[str, Any]:
    source = "stdin" if path == "-" else path
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        request = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source} is not valid JSON: {exc}") from exc
    if not isinstance(request, dict):
        raise UsageError(f"{source} must hold one CreateTrainingJob request (a JSON object)")
    return request


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=True))


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
