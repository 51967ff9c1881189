"""Checkpoint files that are either complete and verified or ignored.

A preempted job is only as good as its last checkpoint, and the moments a job is killed (SIGKILL
after the grace period, a host that vanishes, an S3 sync that copies half a file) are exactly the
moments a write is in progress. So every file is written to a hidden temporary name, fsynced and
renamed into place, and carries a footer with its length and SHA-256: a reader can tell a
truncated or corrupted file from a good one without trusting the unpickler to notice.

File layout: ``<torch.save payload><footer>``, footer = ``struct("<Q32s8s")`` of
(payload length, sha256(payload), MAGIC).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import torch

MAGIC = b"SMQCKPT1"
_FOOTER = struct.Struct("<Q32s8s")
_NAME = re.compile(r"^step-(\d{9,})\.ckpt$")
_PARTIAL_PREFIX = ".partial-"


class CorruptCheckpoint(Exception):
    """The file is not a complete checkpoint written by this trainer."""


@dataclass(frozen=True)
class Saved:
    step: int
    path: Path
    seconds: float


class _HashingWriter:
    """Lets torch.save stream straight to disk while the digest is computed on the way."""

    def __init__(self, file: io.BufferedWriter) -> None:
        self._file = file
        self.digest = hashlib.sha256()
        self.length = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.length += len(data)
        return self._file.write(data)

    def flush(self) -> None:
        self._file.flush()


class CheckpointStore:
    """The checkpoints of one job in one directory, named ``step-<step>.ckpt``."""

    def __init__(self, directory: Path, keep: int) -> None:
        if keep < 1:
            raise ValueError("keep must be at least 1: rotating away the only checkpoint loses the job")
        self.directory = directory
        self.keep = keep

    def path_for(self, step: int) -> Path:
        return self.directory / f"step-{step:09d}.ckpt"

    def steps(self) -> list[int]:
        """Steps that have a file under a final name, oldest first (validity not checked)."""
        if not self.directory.is_dir():
            return []
        found = (_NAME.match(entry.name) for entry in self.directory.iterdir())
        return sorted(int(match.group(1)) for match in found if match)

    def write(self, step: int, state: dict[str, Any]) -> Saved:
        """Write atomically, then drop the oldest files beyond ``keep``."""
        started = time.perf_counter()
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.path_for(step)
        partial = self.directory / f"{_PARTIAL_PREFIX}{final.name}.{os.getpid()}"
        try:
            with open(partial, "wb") as file:
                writer = _HashingWriter(file)
                torch.save(state, cast(IO[bytes], writer))  # torch.save needs only write() and flush()
                file.write(_FOOTER.pack(writer.length, writer.digest.digest(), MAGIC))
                file.flush()
                os.fsync(file.fileno())
            os.replace(partial, final)
        finally:
            partial.unlink(missing_ok=True)
        _fsync_directory(self.directory)
        self._rotate()
        return Saved(step=step, path=final, seconds=time.perf_counter() - started)

    def read(self, step: int) -> dict[str, Any]:
        """Load a checkpoint, raising CorruptCheckpoint unless it is complete and intact."""
        path = self.path_for(step)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CorruptCheckpoint(f"cannot read {path.name}: {exc}") from exc
        if len(data) < _FOOTER.size:
            raise CorruptCheckpoint(f"{path.name} is truncated ({len(data)} bytes)")
        length, digest, magic = _FOOTER.unpack_from(data, len(data) - _FOOTER.size)
        if magic != MAGIC:
            raise CorruptCheckpoint(f"{path.name} has no checkpoint footer (truncated or foreign file)")
        if length != len(data) - _FOOTER.size:
            raise CorruptCheckpoint(f"{path.name} payload is {len(data) - _FOOTER.size} bytes, footer says {length}")
        payload = memoryview(data)[:length]
        if hashlib.sha256(payload).digest() != digest:
            raise CorruptCheckpoint(f"{path.name} fails its SHA-256 check")
        return torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)

    def latest_valid(self, on_skip: Callable[[int, CorruptCheckpoint], None]) -> tuple[int, dict[str, Any]] | None:
        """The newest checkpoint that verifies; each one skipped on the way is reported."""
        for step in reversed(self.steps()):
            try:
                return step, self.read(step)
            except CorruptCheckpoint as exc:
                on_skip(step, exc)
        return None

    def remove_partials(self) -> None:
        """Delete temporary files left by a writer that was killed mid-save."""
        if self.directory.is_dir():
            for entry in self.directory.iterdir():
                if entry.name.startswith(_PARTIAL_PREFIX):
                    entry.unlink(missing_ok=True)

    def _rotate(self) -> None:
        for step in self.steps()[: -self.keep]:
            self.path_for(step).unlink(missing_ok=True)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable, not just the file contents."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def snapshot(value: Any) -> Any:
    """A deep copy whose tensors are private CPU copies, so training can go on while it is written."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    if isinstance(value, list):
        return [snapshot(item) for item in value]
    if isinstance(value, tuple):
        return tuple(snapshot(item) for item in value)
    return value


class BackgroundWriter:
    """Writes one snapshot at a time on a thread so a periodic save costs training only the copy.

    A new save first waits for the previous one: at most one write is in flight, and the files
    appear in step order. A write that failed is raised by the next ``submit`` or ``wait``.
    """

    def __init__(self, store: CheckpointStore, on_saved: Callable[[Saved], None]) -> None:
        self._store = store
        self._on_saved = on_saved
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def submit(self, step: int, state: dict[str, Any]) -> None:
        self.wait()
        self._thread = threading.Thread(target=self._write, args=(step, state), name="checkpoint-writer")
        self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise RuntimeError("background checkpoint write failed") from error

    def _write(self, step: int, state: dict[str, Any]) -> None:
        try:
            self._on_saved(self._store.write(step, state))
        except BaseException as exc:  # re-raised on the training thread by wait()
            self._error = exc
