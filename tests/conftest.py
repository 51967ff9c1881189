"""Suite-wide settings. `make test-fast` loads the `fast` Hypothesis profile (fewer examples)."""

from __future__ import annotations

import os

from hypothesis import settings

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

settings.register_profile("thorough", deadline=None)
settings.register_profile("fast", max_examples=20, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "thorough"))
