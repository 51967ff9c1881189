"""The local stack's AWS: one moto server on a free port of 127.0.0.1 for every service the template
uses (MOTO_SERVICES), and the environment that points boto3 at it. Started under a deadline, so a
server that never comes up fails the start, and reset, since moto's backends outlive a stack that
ran before in this process."""

from __future__ import annotations

import socket
import threading

import requests
from moto.server import ThreadedMotoServer

from smq.local.atomic_dynamodb import make_moto_dynamodb_atomic
from smq.local.stack_options import MOTO_SERVICES, REGION, StackStartError

MOTO_START_SECONDS = 30.0
"""moto's own start waits without limit for a server that may never come up."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalMoto:
    """`start()` it, read `url` and `aws_environment()`, `stop()` it (a server never started is
    left alone)."""

    def __init__(self) -> None:
        self._server: ThreadedMotoServer | None = None
        self.url = ""

    def start(self) -> None:
        make_moto_dynamodb_atomic()
        port = free_port()
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        starter = threading.Thread(target=server.start, name="smq-moto-start", daemon=True)
        starter.start()
        starter.join(MOTO_START_SECONDS)
        if starter.is_alive():
            raise StackStartError(f"moto did not come up on 127.0.0.1:{port} in {MOTO_START_SECONDS:g} s; try again")
        self._server = server
        self.url = f"http://127.0.0.1:{port}"
        requests.post(f"{self.url}/moto-api/reset", timeout=10).raise_for_status()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def aws_environment(self) -> dict[str, str]:
        """Every service's endpoint, the region and moto's dummy keys (the stack replaces them with
        its admin's once moto checks IAM)."""
        environment = {f"AWS_ENDPOINT_URL_{suffix}": self.url for suffix in MOTO_SERVICES.values()}
        environment.update(
            {
                "AWS_DEFAULT_REGION": REGION,
                "AWS_REGION": REGION,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
            }
        )
        return environment
