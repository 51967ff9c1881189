"""Warm pools as the queue counts them: a job's warm key, the keep-alive the queue sends, the
`WarmPoolStatus` it reads, the warm pool an attempt leaves, and the `warm_pools` section."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from smq_lambda.adapters.item_codec import from_item, to_item
from smq_lambda.adapters.sagemaker import attempt_request
from smq_lambda.domain.config.config_document import ConfigDocumentError, parse_config_document
from smq_lambda.domain.config.warm_pool_document import DEFAULT_MAX_KEEP_ALIVE_S, MAX_KEEP_ALIVE_S, WarmPoolPolicy
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job, demand_of
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.sagemaker.warm_pool_status import WarmPoolStatus, warm_pool_status_of
from smq_lambda.domain.warm.warm_match import warm_pool_key
from smq_lambda.domain.warm.warm_pools import WarmPool, keep_alive_sent, warm_key_of, warm_pool_left

P5, G5 = "ml.p5.48xlarge", "ml.g5.xlarge"
NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)


def request(keep_alive: int | None = 900, **resources: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"InstanceType": P5, "InstanceCount": 2, "VolumeSizeInGB": 30, **resources}
    if keep_alive is not None:
        config["KeepAlivePeriodInSeconds"] = keep_alive
    return {"TrainingJobName": "train", "RoleArn": "arn:aws:iam::1:role/r", "ResourceConfig": config}


def job(body: dict[str, Any]) -> Job:
    return Job(
        name="train", job_id="id", state=JobState.PENDING, priority=0, submitted_at=NOW,
        demand=demand_of(body), owner="o", request=body, warm_key=warm_key_of(body),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("body", "keyed"),
    [
        (request(), True),
        (request(keep_alive=None), False),
        (request(keep_alive=0), False),
        ({**request(), "EnableManagedSpotTraining": True}, False),
        (request(InstancePreferences=[{"InstanceType": P5}]), False),
    ],
)
def test_a_job_has_a_warm_key_only_when_it_may_keep_and_reuse_warm_pools(body: dict[str, Any], keyed: bool) -> None:
    assert (warm_key_of(body) == warm_pool_key(body)) is keyed
    assert (warm_key_of(body) is None) is not keyed


@pytest.mark.parametrize(
    ("keep_alive", "ceiling", "sent", "member"),
    [
        (900, None, None, 900),
        (900, 1800, 900, 900),
        (900, 300, 300, 300),
        (900, 0, 0, None),
        (None, 1800, 0, None),
    ],
)
def test_the_keep_alive_sent_is_the_requests_own_at_most_the_ceiling(
    keep_alive: int | None, ceiling: int | None, sent: int | None, member: int | None
) -> None:
    body = request(keep_alive=keep_alive)
    assert keep_alive_sent(body, ceiling) == sent
    started = lifecycle.start(job(body), NOW, reason="fits", keep_alive_s=ceiling)
    assert started.current_attempt is not None and started.current_attempt.keep_alive_s == sent
    assert attempt_request(started)["ResourceConfig"].get("KeepAlivePeriodInSeconds") == member
    assert body == request(keep_alive=keep_alive), "the submitted request is untouched"
    assert from_item(to_item(started, ttl_days=30)) == started


def test_the_warm_key_round_trips_through_the_item() -> None:
    queued = job(request())
    assert from_item(to_item(queued, ttl_days=30)).warm_key == queued.warm_key is not None


@pytest.mark.parametrize(
    ("described", "expected"),
    [
        ({"WarmPoolStatus": {"Status": "Available"}}, WarmPoolStatus("Available")),
        (
            {"WarmPoolStatus": {"Status": "Reused", "ResourceRetainedBillableTimeInSeconds": 42, "ReusedByJob": "b"}},
            WarmPoolStatus("Reused", 42, "b"),
        ),
        (
            {"WarmPoolStatus": {"Status": "Terminated", "ResourceRetainedBillableTimeInSeconds": True}},
            WarmPoolStatus("Terminated"),
        ),
        ({}, None),
        ({"WarmPoolStatus": "Available"}, None),
        ({"WarmPoolStatus": {"Status": 3}}, None),
    ],
)
def test_warm_pool_status_is_read_from_a_description_or_an_event(
    described: dict[str, Any], expected: WarmPoolStatus | None
) -> None:
    assert warm_pool_status_of(described) == expected


def test_an_attempt_leaves_the_warm_pool_of_the_request_it_sent() -> None:
    body = request()
    started = lifecycle.start(job(body), NOW, reason="fits", keep_alive_s=300)
    attempt = started.current_attempt
    assert attempt is not None
    sent = attempt_request(started)
    assert warm_pool_left(started, 1, attempt.training_job_name, NOW) == WarmPool(
        attempt.training_job_name, P5, P5, 2, warm_pool_key(sent), NOW + timedelta(seconds=300)
    )


def test_a_flexible_attempt_leaves_the_warm_pool_of_its_placement() -> None:
    body = request(InstancePreferences=[{"InstanceType": G5, "InstanceCount": 4}])
    flexible = Job(
        name="flex", job_id="id", state=JobState.PENDING, priority=0, submitted_at=NOW, demand={G5: 4},
        owner="o", request=body, placements=(Placement(G5, 4),),
    )  # fmt: skip
    started = lifecycle.start(flexible, NOW, reason="fits", placement=Placement(G5, 4))
    warm = warm_pool_left(started, 1, "flex-1", NOW)
    assert warm is not None and (warm.pool, warm.count) == (G5, 4)


@pytest.mark.parametrize("ceiling", [0, None])
def test_an_attempt_that_kept_nothing_leaves_no_warm_pool(ceiling: int | None) -> None:
    body = request(keep_alive=None if ceiling is None else 900)
    started = lifecycle.start(job(body), NOW, reason="fits", keep_alive_s=ceiling)
    assert warm_pool_left(started, 1, "train-1", NOW) is None
    assert warm_pool_left(started, 2, "train-2", NOW) is None


def test_the_warm_pools_section() -> None:
    def parsed(section: Any) -> WarmPoolPolicy | None:
        return parse_config_document({"pools": {P5: 2}, "warm_pools": section}, source="doc").warm_pools

    assert parsed({"max_keep_alive_s": 1800}) == WarmPoolPolicy(1800)
    assert parsed({}) == WarmPoolPolicy(DEFAULT_MAX_KEEP_ALIVE_S)
    assert parse_config_document({"pools": {P5: 2}}, source="doc").warm_pools is None
    for bad, path in [
        ({"max_keep_alive_s": MAX_KEEP_ALIVE_S + 1}, "warm_pools.max_keep_alive_s"),
        ({"max_keep_alive_s": -1}, "warm_pools.max_keep_alive_s"),
        ({"keep": 1}, "warm_pools.keep"),
        ([], "warm_pools"),
    ]:
        with pytest.raises(ConfigDocumentError) as raised:
            parsed(copy.deepcopy(bad))
        assert raised.value.path == path
