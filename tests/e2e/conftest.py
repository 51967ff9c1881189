"""Every test here runs the whole local stack or real processes, so all are `slow`: `make test-fast`
skips them, `make test` runs them. `stack` is one synthetic local stack per module; a module that
needs other options defines its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        capacity={POOL: 2}, executor="synthetic", workdir=tmp_path_factory.mktemp("stack"), reconcile_every_seconds=5
    )
    with LocalStack(options) as running:
        yield running
