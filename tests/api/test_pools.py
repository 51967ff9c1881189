"""GET /pools reads what the last scheduling pass measured, under today's capacities, and counts the
jobs pending under each pool when asked; it never asks SageMaker (the service has no SageMaker
dependency at all, and the template grants the API none)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from smq_lambda.pass_summary import PassSummary, PoolMeasure
from smq_lambda.scheduling.snapshot import SchedulerConfig, UnpooledPolicy
from smq_lambda.service.pass_summary_reader import with_current_capacity

from tests.api.builders import G5, P5, instance_groups, run, training_request
from tests.api.gateway import ApiGateway
from tests.support.fakes import FakeClock, FakeConfigSource, InMemoryPassSummaries

MEASURED = datetime(2024, 5, 1, 12, 0, 0, 250_000, tzinfo=UTC)
C5 = "ml.c5.xlarge"


def report(*pools: tuple[str, int | None, int, str | None]) -> PassSummary:
    return PassSummary(
        pools=tuple(PoolMeasure(pool, capacity, in_use, head) for pool, capacity, in_use, head in pools),
        measured_at=MEASURED,
    )


def test_pools_show_what_the_last_pass_measured_and_the_jobs_pending_now(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries
) -> None:
    api.add(training_request("waiting"))
    api.add(training_request("later"))
    pass_summaries.publish(report((G5, 4, 3, "waiting"), (P5, 2, 2, None)))

    reply = api.pools()

    assert reply.status == 200
    assert reply.body == {
        "pools": [
            {"pool": G5, "capacity": 4, "in_use": 3, "warm": 0, "pending": 2, "head": "waiting"},
            {"pool": P5, "capacity": 2, "in_use": 2, "warm": 0, "pending": 0, "head": None},
        ],
        "measured_at": "2024-05-01T12:00:00.250Z",
    }


def test_capacities_are_the_ones_configured_now(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries, config: FakeConfigSource
) -> None:
    pass_summaries.publish(report((G5, 4, 3, None), (P5, 2, 1, None)))
    config.set_pools({G5: 8, C5: 1})

    pools = api.pools().body["pools"]

    assert pools == [
        {"pool": G5, "capacity": 8, "in_use": 3, "warm": 0, "pending": 0, "head": None},
        {"pool": C5, "capacity": 1, "in_use": 0, "warm": 0, "pending": 0, "head": None},
        {"pool": P5, "capacity": 0, "in_use": 1, "warm": 0, "pending": 0, "head": None},
    ]


def test_before_any_pass_the_live_jobs_are_counted_from_the_table(
    api: ApiGateway, store: Any, clock: FakeClock
) -> None:
    api.add(training_request("big", instances=3))
    run(store, "big", clock())
    api.add(training_request("next", instances=2))
    api.add(training_request("hetero", ResourceConfig=instance_groups((P5, 1), (G5, 1))))

    reply = api.pools()

    assert reply.body == {
        "pools": [
            {"pool": G5, "capacity": 4, "in_use": 3, "warm": 0, "pending": 2, "head": None},
            {"pool": P5, "capacity": 2, "in_use": 0, "warm": 0, "pending": 1, "head": None},
        ],
        "measured_at": None,
    }, "a job is pending in every pool it needs (listed in each)"


def test_a_newer_report_replaces_the_last(api: ApiGateway, pass_summaries: InMemoryPassSummaries) -> None:
    pass_summaries.publish(report((G5, 4, 1, None)))
    pass_summaries.publish(
        PassSummary(pools=(PoolMeasure(G5, 4, 4, "big"),), measured_at=datetime(2024, 5, 1, 12, 5, tzinfo=UTC))
    )

    reply = api.pools()

    assert reply.body["pools"][0] == {"pool": G5, "capacity": 4, "in_use": 4, "warm": 0, "pending": 0, "head": "big"}
    assert reply.body["measured_at"] == "2024-05-01T12:05:00.000Z"


def test_merge_keeps_unconfigured_pools_only_while_used_or_awaited() -> None:
    measured = report((G5, 4, 1, None), (P5, 2, 0, None), (C5, None, 2, None), ("ml.m5.large", None, 0, "m5-job"))
    config = SchedulerConfig(pools={G5: 6}, unpooled=UnpooledPolicy.UNLIMITED)

    merged = with_current_capacity(measured, config)

    assert merged == [
        PoolMeasure(G5, 6, 1, None),
        PoolMeasure(C5, None, 2, None),
        PoolMeasure("ml.m5.large", None, 0, "m5-job"),
    ]


def test_with_adaptive_spot_each_type_shows_its_interruption_rate_on_its_pools(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries, config: FakeConfigSource
) -> None:
    config.set_pools({G5: 4, f"{G5}:spot": 2, P5: 2})
    measured = report((G5, 4, 0, None), (f"{G5}:spot", 2, 2, None), (P5, 2, 0, None))
    pass_summaries.publish(replace(measured, spot_rates={G5: 0.693147}))

    pools = {row["pool"]: row.get("spot_interruptions_per_hour") for row in api.pools().body["pools"]}

    assert pools == {G5: 0.6931, f"{G5}:spot": 0.6931, P5: None}


def test_warm_instances_show_as_in_use_and_warm(api: ApiGateway, pass_summaries: InMemoryPassSummaries) -> None:
    pass_summaries.publish(PassSummary(pools=(PoolMeasure(P5, 2, 2, None, warm=1),), measured_at=MEASURED))

    pools = {pool["pool"]: pool for pool in api.pools().body["pools"]}
    assert pools[P5] == {"pool": P5, "capacity": 2, "in_use": 2, "warm": 1, "pending": 0, "head": None}
