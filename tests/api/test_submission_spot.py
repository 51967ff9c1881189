"""Submission of spot jobs: a spot request allows on demand unless tagged `smq:spot-only` = `true`
(a tag the queue reads, so it is not refused as the queue's own); the job carries its purchase
options for the pass."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from smq_lambda.domain.config.spot_document import AdaptiveSpot, SpotSection
from smq_lambda.domain.placements.purchase import Purchase, spot_pool
from smq_lambda.errors import InvalidRequest
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.service.submission import SubmissionPolicy, new_job

from tests.api.builders import ALICE, G5, P5, POOLS, training_request
from tests.api.gateway import ApiGateway
from tests.api.refusals import assert_refused_and_nothing_written
from tests.support.fakes import FakeConfigSource, RecordingTrigger

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def spot_request(spot: bool = True, **tags: str) -> dict[str, Any]:
    request = training_request("vit")
    request["EnableManagedSpotTraining"] = spot
    request["StoppingCondition"] = {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    request["Tags"] = [{"Key": key, "Value": value} for key, value in tags.items()]
    return request


def submit(request: dict[str, Any], config: SchedulerConfig | None = None) -> Any:
    config = config or SchedulerConfig(pools=POOLS)
    return new_job(request, owner=ALICE, config=config, policy=SubmissionPolicy(), now=NOW)


def with_spot(on_demand_after_s: int | None = 600) -> SchedulerConfig:
    """G5: 2 on demand and 6 on spot; P5: 2, no spot pool."""
    return SchedulerConfig(
        pools={G5: 2, spot_pool(G5): 6, P5: 2},
        spot=SpotSection(pools={G5: 6}, on_demand_after_s=on_demand_after_s),
    )


def sized(instances: int, spot: bool = True, instance_type: str = G5, **tags: str) -> dict[str, Any]:
    request = spot_request(spot, **tags)
    request["ResourceConfig"].update(InstanceType=instance_type, InstanceCount=instances)
    return request


def preferring(*preferences: tuple[str, int], **tags: str) -> dict[str, Any]:
    request = spot_request(**tags)
    request["ResourceConfig"] = {
        "InstancePreferences": [{"InstanceType": kind, "InstanceCount": count} for kind, count in preferences],
        "VolumeSizeInGB": 30,
    }
    return request


ONLY = {"smq:spot-only": "true"}
ACCEPTED = [
    ("spot, larger than the on-demand pool, fits the spot pool", sized(6), with_spot()),
    ("spot only, fits the spot pool", sized(6, **ONLY), with_spot()),
    (
        "spot, larger than the spot pool, fits on demand after a wait",
        sized(2),
        SchedulerConfig(pools={G5: 2, spot_pool(G5): 1}, spot=SpotSection(pools={G5: 1}, on_demand_after_s=600)),
    ),
    ("flexible spot, its first preference fits its spot pool", preferring((G5, 6), (P5, 4)), with_spot()),
    ("no spot section: spot counts in the type's pool", sized(4), SchedulerConfig(pools=POOLS)),
    (
        "spot, larger than the spot pool, fits on demand after a wait beside the adaptive rule",
        sized(2),
        SchedulerConfig(
            pools={G5: 2, spot_pool(G5): 1},
            spot=SpotSection(pools={G5: 1}, on_demand_after_s=600, adaptive=AdaptiveSpot(0.5)),
        ),
    ),
]
ADAPTIVE_ONLY = SchedulerConfig(
    pools={G5: 2, spot_pool(G5): 1, P5: 2}, spot=SpotSection(pools={G5: 1}, adaptive=AdaptiveSpot(0.5))
)
"""G5: 2 on demand and 1 on spot; spot jobs go on demand only while G5 is interrupted often."""
REFUSED = [
    ("on demand, larger than the on-demand pool", sized(6, spot=False), with_spot(), "that pool holds only 2"),
    (
        "spot, larger than both pools",
        sized(7),
        with_spot(),
        "its pools hold only 6 (ml.g5.xlarge:spot) and 2 (ml.g5.xlarge)",
    ),
    (
        "spot only never uses the on-demand pool",
        sized(2, **ONLY),
        SchedulerConfig(pools={G5: 2, spot_pool(G5): 1}, spot=SpotSection(pools={G5: 1}, on_demand_after_s=600)),
        "its pool ml.g5.xlarge:spot holds only 1",
    ),
    (
        "spot the queue never places on demand",
        sized(2),
        SchedulerConfig(pools={G5: 2, spot_pool(G5): 1}, spot=SpotSection(pools={G5: 1})),
        "its pool ml.g5.xlarge:spot holds only 1",
    ),
    (
        "a type without a spot pool counts spot in its own",
        sized(3, instance_type=P5),
        with_spot(),
        "that pool holds only 2",
    ),
    (
        "spot the queue never places on demand, which the on-demand pool could hold",
        sized(2),
        SchedulerConfig(pools={G5: 2, spot_pool(G5): 1}, spot=SpotSection(pools={G5: 1})),
        (
            "the on-demand pool ml.g5.xlarge holds 2, but the queue never places a spot job there "
            "(spot.on_demand_after_s is not set): submit the job on demand (EnableManagedSpotTraining false) to run there"
        ),
    ),
    (
        "spot the queue places on demand only while its type is interrupted often",
        sized(2),
        ADAPTIVE_ONLY,
        (
            "ResourceConfig.InstanceCount: the job needs 2 x ml.g5.xlarge but its pool ml.g5.xlarge:spot holds only 1, "
            "so it could never start (a job larger than its pool is refused); the on-demand pool ml.g5.xlarge holds 2, "
            "but the queue places a spot job there only while the type's spot interruption rate is above "
            "spot.adaptive.max_interruptions_per_hour (spot.on_demand_after_s is not set): submit the job on demand "
            "(EnableManagedSpotTraining false) to run there"
        ),
    ),
    (
        "flexible spot, no preference fits its spot pool, on demand only while interrupted often",
        preferring((G5, 2), (P5, 3)),
        ADAPTIVE_ONLY,
        (
            "ResourceConfig.InstancePreferences[0].InstanceCount: 2 x ml.g5.xlarge is too many: its pool "
            "ml.g5.xlarge:spot holds only 1; the on-demand pool ml.g5.xlarge holds 2, but the queue places a spot job "
            "there only while"
        ),
    ),
    (
        "flexible spot only, no preference fits",
        preferring((G5, 7), (P5, 3), **ONLY),
        with_spot(),
        "its pool ml.g5.xlarge:spot holds only 6",
    ),
]


@pytest.mark.parametrize(("case", "request_", "config"), ACCEPTED, ids=[case[0] for case in ACCEPTED])
def test_a_spot_job_is_queued_when_a_pool_its_purchase_options_allow_holds_it(
    case: str, request_: dict[str, Any], config: SchedulerConfig
) -> None:
    assert submit(request_, config).state == "pending"


@pytest.mark.parametrize(("case", "request_", "config", "why"), REFUSED, ids=[case[0] for case in REFUSED])
def test_a_job_no_pool_its_purchase_options_allow_could_hold_is_refused(
    case: str, request_: dict[str, Any], config: SchedulerConfig, why: str
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        submit(request_, config)
    assert why in str(refused.value)


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


@pytest.fixture
def config() -> FakeConfigSource:
    """The API's configuration: ADAPTIVE_ONLY."""
    source = FakeConfigSource()
    source.config = ADAPTIVE_ONLY
    return source


def test_the_api_refuses_a_spot_job_no_reachable_pool_holds_with_a_400_and_writes_nothing(
    api: ApiGateway, dump_table: Callable[[], list[dict[str, Any]]], trigger: RecordingTrigger
) -> None:
    request = sized(2)
    request["TrainingJobName"] = "spot-job"
    assert_refused_and_nothing_written(
        api, dump_table, trigger, request, "ResourceConfig.InstanceCount", "the on-demand pool ml.g5.xlarge holds 2"
    )
