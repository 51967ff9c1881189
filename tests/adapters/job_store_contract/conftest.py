"""Each contract test runs once per store."""

from __future__ import annotations

import pytest

from tests.adapters.job_store_contract.subjects import STORES, Subject, make_subject


@pytest.fixture(params=STORES)
def subject(request: pytest.FixtureRequest) -> Subject:
    return make_subject(request.param, request)
