"""Shared helpers for the trainer tests: the trainer's modules, the tiny model, clean environments, live logs.

The trainer is a directory of plain modules (SageMaker runs ``train.py`` as a script from
``source_dir``), so the tests import them from here, after putting that directory on sys.path.
"""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAINER_DIR = REPO / "trainer"
TRAIN_SCRIPT = TRAINER_DIR / "train.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")

if str(TRAINER_DIR) not in sys.path:
    sys.path.insert(0, str(TRAINER_DIR))

import checkpoint_store  # noqa: E402
import hparams  # noqa: E402
import sample_stream  # noqa: E402
import topology  # noqa: E402
import train  # noqa: E402

__all__ = ["checkpoint_store", "hparams", "sample_stream", "topology", "train"]

# A real timm ViT small enough that a step takes milliseconds on one CPU thread.
TINY = [
    "--embed-dim", "32", "--depth", "2", "--num-heads", "2", "--patch-size", "8",
    "--img-size", "32", "--batch-size", "8", "--threads", "1",
]  # fmt: skip

# Variables from the developer's shell that would change where or how the trainer runs.
FOREIGN_PREFIXES = (
    "SM_",
    "SMQ_",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_",
    "OMP_",
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(FOREIGN_PREFIXES)}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_to_completion(command: list[str], env: dict[str, str], timeout: float = 120) -> str:
    """Run a trainer command, fail the test with its output if it does not exit 0."""
    result = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


class LiveProcess:
    """A trainer subprocess whose output lines can be waited for while it runs."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        compiled = re.compile(pattern)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no line matching {pattern!r} within {timeout} s:\n" + "\n".join(self.lines))
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"process ended before {pattern!r}:\n" + "\n".join(self.lines))
            self.lines.append(line)
            match = compiled.search(line)
            if match:
                return match

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        """Wait for exit; returns the status and the whole output."""
        status = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        while not self._queue.empty():
            line = self._queue.get()
            if line is not None:
                self.lines.append(line)
        return status, "\n".join(self.lines)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def file_bytes(path: Path) -> bytes:
    assert path.is_file(), f"{path} was not written"
    return path.read_bytes()
