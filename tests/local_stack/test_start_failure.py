"""`smq local up` fails to start fast and clearly (one line on stderr, exit 1, nothing left running),
and SIGTERM ends it cleanly (exit 0) whether it is up or still starting."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from smq.local import stack_moto
from smq.local.stack import STATE_FILE, LocalStack, LocalStackOptions, StackStartError

SMQ = [sys.executable, "-m", "smq.cli"]
SECONDS_TO_FAIL = 20
SECONDS_TO_STOP = 20


def local_up(workdir: Path, *options: str) -> list[str]:
    return [*SMQ, "local", "up", "--executor", "synthetic", "--workdir", str(workdir), *options]


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port of 127.0.0.1 that something else listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def wait_until(condition: Callable[[], bool], process: subprocess.Popen[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, f"smq local up exited {process.returncode}"
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.05)


def stop_with_sigterm(process: subprocess.Popen[str]) -> tuple[int, float, str]:
    """Exit code, seconds from SIGTERM to exit, and stderr."""
    process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    try:
        _, err = process.communicate(timeout=SECONDS_TO_STOP)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, time.monotonic() - sent, err


def test_a_port_in_use_fails_at_once_and_leaves_the_running_stacks_state_alone(tmp_path: Path, held_port: int) -> None:
    (tmp_path / STATE_FILE).write_text("{}")  # as the stack holding the port wrote it

    result = subprocess.run(
        local_up(tmp_path, "--port", str(held_port)), capture_output=True, text=True, timeout=SECONDS_TO_FAIL
    )

    assert result.returncode == 1
    assert result.stderr == (
        f"smq: error: port {held_port} on 127.0.0.1 is in use; pass --port N (0 picks a free one) "
        "or stop what holds it\n"
    )
    assert (tmp_path / STATE_FILE).read_text() == "{}"


def test_a_missing_template_fails_at_once_saying_which(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "template.yaml"

    result = subprocess.run(
        local_up(tmp_path, "--port", "0", "--template", str(missing)),
        capture_output=True,
        text=True,
        timeout=SECONDS_TO_FAIL,
    )

    assert result.returncode == 1
    assert result.stderr == f"smq: error: no template at {missing}; check --template\n"
    assert not (tmp_path / STATE_FILE).exists()


def test_a_server_that_never_comes_up_fails_the_start_and_frees_the_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    released = threading.Event()

    class NeverReady:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def start(self) -> None:
            released.wait()

    monkeypatch.setattr(stack_moto, "ThreadedMotoServer", NeverReady)
    monkeypatch.setattr(stack_moto, "MOTO_START_SECONDS", 0.2)
    port = stack_moto.free_port()

    try:
        with pytest.raises(StackStartError) as raised:
            LocalStack(LocalStackOptions(executor="synthetic", workdir=tmp_path, api_port=port)).start()
    finally:
        released.set()

    assert "moto did not come up" in str(raised.value)
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sigterm_stops_a_running_stack(tmp_path: Path) -> None:
    up = subprocess.Popen(
        local_up(tmp_path, "--port", "0"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    wait_until((tmp_path / STATE_FILE).exists, up, seconds=60)

    code, seconds, err = stop_with_sigterm(up)

    assert (code, err) == (0, "")
    assert seconds < SECONDS_TO_STOP
    assert not (tmp_path / STATE_FILE).exists()


@pytest.mark.timeout(120)
def test_sigterm_stops_a_stack_that_is_still_starting(tmp_path: Path) -> None:
    workdir = tmp_path / "up"
    up = subprocess.Popen(
        local_up(workdir, "--port", "0"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    wait_until(workdir.exists, up, seconds=60)  # the first thing the start does

    code, _, err = stop_with_sigterm(up)

    assert (code, err) == (0, "")
    assert not (workdir / STATE_FILE).exists()
