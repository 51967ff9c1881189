"""The DurationStore port: the DynamoDB store on moto and the in-memory fake, against one contract."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import Stubber
from smq.local.atomic_dynamodb import make_moto_dynamodb_atomic
from smq_lambda.adapters.dynamodb_durations import ADD_ATTEMPTS, DynamoDurationStore, item_key
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import ServiceUnavailable
from smq_lambda.forecast.durations import MAX_SAMPLES, Basis, DurationKey, Level, expected_duration
from smq_lambda.ports import DurationStore
from smq_lambda.service.duration_history import load_history

from tests.support.fake_durations import InMemoryDurationStore

ALICE = "arn:aws:iam::123456789012:user/alice"
FAMILY = DurationKey(Level.FAMILY, f"{ALICE}#resnet")
POOL = DurationKey(Level.POOL, "ml.p5.48xlarge")


@pytest.fixture(params=["memory", "dynamodb"])
def store(request: pytest.FixtureRequest) -> DurationStore:
    if request.param == "memory":
        return InMemoryDurationStore()
    table = request.getfixturevalue("table")
    return DynamoDurationStore(table, request.getfixturevalue("dynamodb_client"))


def test_nothing_is_known_before_a_completion(store: DurationStore) -> None:
    assert store.load([FAMILY, POOL]).summaries == {}


def test_a_duration_reads_back_under_its_key_only(store: DurationStore) -> None:
    store.add(FAMILY, "job-1", 1234.5)

    history = store.load([FAMILY, POOL])

    assert set(history.summaries) == {FAMILY}
    assert history.summaries[FAMILY].seconds == (1234.5,)


def test_a_repeated_completion_adds_nothing(store: DurationStore) -> None:
    store.add(FAMILY, "job-1", 100)
    store.add(FAMILY, "job-1", 100)
    store.add(FAMILY, "job-2", 200)

    assert store.load([FAMILY]).summaries[FAMILY].seconds == (100.0, 200.0)


def test_the_summary_keeps_the_newest(store: DurationStore) -> None:
    for index in range(MAX_SAMPLES + 5):
        store.add(POOL, f"job-{index}", index)

    assert store.load([POOL]).summaries[POOL].seconds == tuple(float(index) for index in range(5, MAX_SAMPLES + 5))


def test_concurrent_completions_are_all_counted(store: DurationStore) -> None:
    """Each add reads and writes conditionally, and a lost race reads again: as many adds at once
    as an add has tries all land (moto made atomic, as DynamoDB is)."""
    make_moto_dynamodb_atomic()
    threads = [threading.Thread(target=store.add, args=(POOL, f"job-{index}", index)) for index in range(ADD_ATTEMPTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(store.load([POOL]).summaries[POOL].seconds) == [float(index) for index in range(ADD_ATTEMPTS)]


def test_the_item_is_no_job(dynamodb_client: Any, table: str) -> None:
    DynamoDurationStore(table, dynamodb_client).add(FAMILY, "job-1", 60)

    item = dynamodb_client.get_item(TableName=table, Key={"name": {"S": item_key(FAMILY)}})["Item"]

    assert item["name"]["S"] == "#durations#family#arn:aws:iam::123456789012:user/alice#resnet"
    assert not {"order_key", "pending_pool", "state", "expires_at"} & set(item)


def test_a_load_reads_the_distinct_keys_in_one_batch(dynamodb_client: Any, table: str) -> None:
    store = DynamoDurationStore(table, dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        stubber.add_response("batch_get_item", {"Responses": {table: []}})

        store.load([FAMILY, POOL, FAMILY])

        stubber.assert_no_pending_responses()


@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "ThrottlingException"])
def test_a_throttled_table_is_service_unavailable(dynamodb_client: Any, code: str) -> None:
    store = DynamoDurationStore("smq-queue", dynamodb_client)
    with Stubber(dynamodb_client) as stubber:
        stubber.add_client_error("get_item", service_error_code=code, http_status_code=400)
        with pytest.raises(ServiceUnavailable):
            store.add(FAMILY, "job-1", 60)


def test_durations_an_earlier_release_kept_under_a_spot_pool_still_read(dynamodb_client: Any, table: str) -> None:
    """The previous release learned a spot job's duration under the pool it held, `<type>:spot`; the
    items it wrote (this layout) count for every job of the type now, kept per instance type."""
    for level, key in (("pool", "ml.p5.48xlarge:spot"), ("owner-pool", f"{ALICE}#ml.p5.48xlarge:spot")):
        dynamodb_client.put_item(
            TableName=table,
            Item={
                "name": {"S": f"#durations#{level}#{key}"},
                "seconds": {"L": [{"N": "600.000"}, {"N": "700.000"}, {"N": "800.000"}]},
                "counted": {"L": [{"S": "id-1"}, {"S": "id-2"}, {"S": "id-3"}]},
                "version": {"N": "3"},
            },
        )
    store = DynamoDurationStore(table, dynamodb_client)
    waiting = Job(
        name="resnet-7",
        job_id="id-7",
        state=JobState.PENDING,
        priority=0,
        submitted_at=datetime(2026, 11, 26, tzinfo=UTC),
        demand={"ml.p5.48xlarge": 1},
        owner=ALICE,
        max_runtime_s=3600,
    )

    band = expected_duration(waiting, load_history(store, [waiting]))

    assert (band.basis, band.likely_s, band.samples) == (Basis.OWNER_POOL, 700.0, 3)
