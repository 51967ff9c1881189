"""Suite-wide settings: `make test-fast` loads the `fast` Hypothesis profile (fewer examples); files with
slow tests run first."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

settings.register_profile("thorough", deadline=None)
settings.register_profile("fast", max_examples=20, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "thorough"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with slow tests first, in collection order otherwise. xdist's workers (`--dist loadfile
    --no-loadscope-reorder`) each take the next file in this order, so the long end-to-end files
    start at once and the many short files even out the end, and both workers finish together."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
