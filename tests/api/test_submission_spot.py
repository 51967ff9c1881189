"""Submission of spot jobs: a spot request allows on demand unless tagged `smq:spot-only` = `true`
(a tag the queue reads, so it is not refused as the queue's own); the job carries its purchase
options for the pass."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from smq_lambda.domain.purchase import Purchase
from smq_lambda.errors import InvalidRequest
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.service.submission import SubmissionPolicy, new_job

from tests.api.builders import ALICE, POOLS, training_request

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def spot_request(spot: bool = True, **tags: str) -> dict[str, Any]:
    request = training_request("vit")
    request["EnableManagedSpotTraining"] = spot
    request["StoppingCondition"] = {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    request["Tags"] = [{"Key": key, "Value": value} for key, value in tags.items()]
    return request


def submit(request: dict[str, Any]) -> Any:
    return new_job(request, owner=ALICE, config=SchedulerConfig(pools=POOLS), policy=SubmissionPolicy(), now=NOW)


@pytest.mark.parametrize(
    ("request_", "purchase"),
    [
        (spot_request(), Purchase.SPOT),
        (spot_request(**{"smq:spot-only": "true"}), Purchase.SPOT_ONLY),
        (spot_request(spot=False), Purchase.ON_DEMAND),
        (training_request("vit"), Purchase.ON_DEMAND),
    ],
)
def test_a_job_carries_its_purchase_options(request_: dict[str, Any], purchase: Purchase) -> None:
    assert submit(request_).purchase is purchase


@pytest.mark.parametrize("value", ["True", "yes", ""])
def test_the_spot_only_tag_is_true_or_refused(value: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        submit(spot_request(**{"smq:spot-only": value}))
    assert refused.value.field == "Tags[smq:spot-only]"
    assert "must be 'true'" in str(refused.value)
