"""The queue's own commands: `smq status`, `describe`, `submit`, `cancel`, `priority`, `pools`,
`quotas`, `costs` and `watch`, each `cmd_<name>(args) -> exit code` over the API client (the
parser that sets them is in main.py)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

from smq.api_client import SmqApiClient
from smq.errors import ApiUnreachable, SmqError
from smq.formatting import (
    costs_footer,
    costs_table,
    describe_text,
    first_estimate_line,
    pools_table,
    quotas_table,
    status_table,
)
from smq.jobs import check_priority, now_utc, queued_message, with_preferences, with_priority
from smq.start_estimates import await_first_estimate

EXIT_OK = 0
CLEAR_SCREEN = "\x1b[H\x1b[2J"


class UsageError(SmqError):
    """The command line or a file it names is wrong: exit 2."""


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
