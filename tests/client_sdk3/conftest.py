"""SDK v3 client tests: the client suite's offline guard, fake credentials and queue world.

These tests run in the SDK v3 environment (`make test-sdk3`, `.venv-sdk3`); each module skips
itself where `sagemaker.train` is missing, so the v2 suite collects them as skipped.
"""

from __future__ import annotations

import pytest

from tests.client.conftest import _test_credentials, isolated_home, moto_url, offline, world

__all__ = ["_test_credentials", "isolated_home", "moto_url", "offline", "world"]


@pytest.fixture(autouse=True)
def _no_role_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """SDK v3 checks a ModelTrainer's role with IAM's policy simulator when it is built; these tests
    have no IAM (nor does the local stack), so they turn the check off as a user offline would."""
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
