"""The whole local stack for the client's end-to-end tests: real estimators, the real trainer, the
README examples. Each test runs with only what `smq local up` prints (the API URL, the AWS
endpoints, region and dummy keys) in the environment, and with `offline` proving nothing tries to
leave the machine. The tests are in several files so that the test run spreads them over workers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from smq.local.stack import REPOSITORY, LocalStack, LocalStackOptions, client_environment

from tests.client.end_to_end.support import POOL


@contextmanager
def local_stack(workdir: Path, monkeypatch: pytest.MonkeyPatch, executor: str, capacity: int) -> Iterator[LocalStack]:
    """The stack, the client environment it prints, and the repository root as the working
    directory (the examples' `source_dir="trainer"`)."""
    options = LocalStackOptions(
        capacity={POOL: capacity},
        executor=executor,
        workdir=workdir,
        stop_grace_seconds=30,
        reconcile_every_seconds=5,
    )
    monkeypatch.chdir(REPOSITORY)
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    with LocalStack(options) as running, client_environment(running):
        yield running


@pytest.fixture
def process_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    """Real trainer processes, one instance: a second job can only run by preempting the first."""
    with local_stack(tmp_path / "stack", monkeypatch, "process", 1) as stack:
        yield stack


@pytest.fixture
def synthetic_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    with local_stack(tmp_path / "stack", monkeypatch, "synthetic", 2) as stack:
        yield stack
