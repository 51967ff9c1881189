"""`smq ui [--port N]`: serve the queue's pages on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import argparse
from typing import Any

import boto3

from smq.api_client import SmqApiClient
from smq.errors import SmqError
from smq.ui.server import UiServer

DEFAULT_PORT = 8789
MAX_RETRIES = 1
"""Fewer than the CLI's: the pages poll again in 3 seconds, and an unreachable API should say so then."""


def register_ui_command(commands: Any, connection: argparse.ArgumentParser) -> None:
    ui = commands.add_parser(
        "ui", parents=[connection], help="the queue in a browser (a local server that signs calls as you)"
    )
    ui.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free one)"
    )
    ui.set_defaults(func=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    from smq.logs import logs_client  # imports the SageMaker SDK: not for every `smq` command

    session = boto3.Session(region_name=args.region)
    client = SmqApiClient(
        args.api_url, stack_name=args.stack_name, region=args.region, boto_session=session, max_retries=MAX_RETRIES
    )
    try:
        server = UiServer(client, logs=logs_client(session), port=args.port)
    except OSError as exc:
        raise SmqError(
            f"cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); pass --port N (0: any free one)"
        ) from exc
    print(f"smq ui: open {server.url} (signs calls to {client.url} as you; Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print()
    return 0
