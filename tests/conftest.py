"""Suite-wide settings: `make test-fast` loads the `fast` Hypothesis profile (fewer examples); files with
slow tests run first."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import settings

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

settings.register_profile("thorough", deadline=None)
settings.register_profile("fast", max_examples=10, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "thorough"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with slow tests first, then files by how many tests they hold, most first (xdist's own
    order, which its `--loadscope-reorder` would put above this one). Each xdist worker (`--dist
    loadfile --no-loadscope-reorder`) takes the next file in this order, so the long end-to-end files
    start at once and the many short files even out the end: both workers finish together."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    tests_in = Counter(item.path for item in items)
    items.sort(key=lambda item: (item.path not in slow_files, -tests_in[item.path]))
