"""The pass lease: one contract, run against the in-memory fake and the DynamoDB adapter (moto)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from smq_lambda.adapters.dynamodb_lease import DEFAULT_DURATION, SCHEDULER_TIMEOUT, DynamoPassLease
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.ports import PassLease

from tests.support.fake_lease import InMemoryPassLease

NOW = datetime(2024, 1, 1, tzinfo=UTC)
DURATION = timedelta(minutes=5)


@pytest.fixture(params=["memory", "dynamodb"])
def lease(request: pytest.FixtureRequest) -> PassLease:
    if request.param == "memory":
        return InMemoryPassLease(DURATION)
    client: Any = request.getfixturevalue("dynamodb_client")
    return DynamoPassLease(request.getfixturevalue("table"), client, DURATION)


def test_only_one_holder_at_a_time(lease: PassLease) -> None:
    assert lease.try_acquire("a", NOW)
    assert not lease.try_acquire("b", NOW)
    assert lease.release("a")
    assert lease.try_acquire("b", NOW)


def test_a_rerun_request_keeps_the_holder_running(lease: PassLease) -> None:
    assert lease.try_acquire("a", NOW)
    lease.request_rerun()

    assert lease.release("a") is False, "the holder must run another pass"
    assert not lease.try_acquire("b", NOW), "and it still holds the lease"
    assert lease.release("a") is True


def test_an_expired_lease_can_be_taken_over(lease: PassLease) -> None:
    assert lease.try_acquire("a", NOW)
    assert lease.try_acquire("b", NOW + DURATION + timedelta(seconds=2))
    assert lease.release("a") is True, "the old holder's release does not disturb the new one"
    assert not lease.try_acquire("c", NOW + DURATION + timedelta(seconds=3))


def test_abandoning_frees_the_lease_and_keeps_a_rerun_for_the_next_holder(lease: PassLease) -> None:
    assert lease.try_acquire("a", NOW)
    lease.abandon("a")
    assert lease.try_acquire("b", NOW)
    lease.abandon("someone-else")
    assert not lease.try_acquire("c", NOW)


def test_a_lease_taken_for_a_given_time_expires_after_it(lease: PassLease) -> None:
    held_for = timedelta(seconds=45)
    assert lease.try_acquire("a", NOW, held_for)

    assert not lease.try_acquire("b", NOW + held_for)
    assert lease.try_acquire("b", NOW + held_for + timedelta(seconds=1))


def test_by_default_a_lease_outlives_any_scheduler_invocation(dynamodb_client: Any, table: str) -> None:
    lease = DynamoPassLease(table, dynamodb_client)
    assert lease.try_acquire("a", NOW)

    assert not lease.try_acquire("b", NOW + SCHEDULER_TIMEOUT)
    assert lease.try_acquire("b", NOW + DEFAULT_DURATION + timedelta(seconds=1))


@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "ThrottlingException"])
def test_a_throttled_lease_is_service_unavailable(dynamodb_client: Any, code: str) -> None:
    lease = DynamoPassLease("smq-queue", dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        stubber.add_client_error("update_item", service_error_code=code, http_status_code=400)
        with pytest.raises(ServiceUnavailable) as raised:
            lease.try_acquire("a", NOW)
    assert raised.value.code == code
