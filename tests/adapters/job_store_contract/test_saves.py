"""The JobStore contract: conditional saves, one winner among concurrent writers."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.errors import VersionConflict
from smq_lambda.governance.spot import on_demand_request

from tests.adapters.builders import G5, P5, job
from tests.adapters.job_store_contract.subjects import NOW, Subject, cancel, move, running, start


def test_save_with_a_stale_version_conflicts_and_changes_nothing(subject: Subject) -> None:
    subject.store.create(job("a"))
    current = move(subject.store, "a", start)

    with pytest.raises(VersionConflict):
        subject.store.save(running(replace(current, version=1)), expected_version=1)

    assert subject.store.get("a") == current


def test_save_of_an_unknown_job_conflicts(subject: Subject) -> None:
    with pytest.raises(VersionConflict):
        subject.store.save(replace(job("ghost"), version=2), expected_version=1)

    assert subject.store.get("ghost") is None


def test_save_insists_on_the_next_version(subject: Subject) -> None:
    created = subject.store.create(job("a"))

    with pytest.raises(ValueError, match="version 2"):
        subject.store.save(replace(created, reason="no version bump"), expected_version=1)

    assert subject.store.get("a") == created


def test_of_two_writers_of_one_version_only_the_first_wins(subject: Subject) -> None:
    created = subject.store.create(job("a"))
    scheduler_view = subject.store.get("a")
    api_view = subject.store.get("a")
    assert scheduler_view is not None and api_view is not None

    started = subject.store.save(start(scheduler_view), expected_version=scheduler_view.version)
    with pytest.raises(VersionConflict):
        subject.store.save(cancel(api_view), expected_version=api_view.version)

    assert subject.store.get("a") == started
    assert started.version == created.version + 1


@pytest.mark.usefixtures("atomic_moto")
def test_concurrent_writers_on_threads_have_exactly_one_winner(subject: Subject) -> None:
    created = subject.store.create(job("a"))
    writers = 8
    barrier = threading.Barrier(writers)
    winners: list[int] = []
    losers: list[int] = []

    def write(index: int) -> None:
        barrier.wait()
        try:
            subject.store.save(lifecycle.explain(created, NOW, f"writer {index}"), expected_version=1)
        except VersionConflict:
            losers.append(index)
        else:
            winners.append(index)

    threads = [threading.Thread(target=write, args=(index,)) for index in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(winners) == 1
    assert len(losers) == writers - 1
    stored = subject.store.get("a")
    assert stored is not None
    assert stored.reason == f"writer {winners[0]}"
    assert stored.version == 2


@pytest.mark.usefixtures("atomic_moto")
def test_concurrent_writers_of_a_starting_job_leave_it_live_exactly_when_the_winner_did(subject: Subject) -> None:
    """Half the writers confirm the start (live), half report a refusal (pending): one wins, and the
    job is among the live ones exactly when the winner's state is live."""
    subject.store.create(job("a", groups=[(G5, 1), (P5, 2)]))
    starting = move(subject.store, "a", start)
    writers = 8
    barrier = threading.Barrier(writers)
    outcomes = [
        running(starting) if index % 2 else lifecycle.refuse_start(starting, NOW, reason="x", lasting=False)
        for index in range(writers)
    ]
    winners: list[int] = []
    losers: list[int] = []

    def write(index: int) -> None:
        barrier.wait()
        try:
            subject.store.save(outcomes[index], expected_version=starting.version)
        except VersionConflict:
            losers.append(index)
        else:
            winners.append(index)

    threads = [threading.Thread(target=write, args=(index,)) for index in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(winners) == 1 and len(losers) == writers - 1
    stored = subject.store.get("a")
    assert stored == outcomes[winners[0]]
    assert subject.store.in_use().live == ([stored] if stored.is_live else [])


def test_a_save_that_changes_the_request_keeps_the_new_one(subject: Subject) -> None:
    """A managed-spot job interrupted too often waits again with its on-demand request, "which
    replaces the stored request for good" (lifecycle.fall_back_to_on_demand)."""
    spot_request = {
        **job("spot").request,
        "EnableManagedSpotTraining": True,
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200},
    }
    subject.store.create(replace(job("spot"), request=spot_request))
    on_demand = on_demand_request(spot_request)

    fell_back = move(
        subject.store,
        "spot",
        start,
        running,
        lambda current: lifecycle.fall_back_to_on_demand(current, NOW, request=on_demand, reason="interrupted"),
    )

    stored = subject.store.get("spot")
    assert fell_back.request == on_demand
    assert stored == fell_back
    assert stored is not None and stored.request == on_demand


def test_a_writer_holding_an_earlier_job_of_a_reused_name_conflicts(subject: Subject) -> None:
    old = subject.store.create(job("reused", minute=0))
    subject.store.save(cancel(old), expected_version=1)
    new = subject.store.create(job("reused", minute=10, job_id="new-submission"))

    with pytest.raises(VersionConflict):
        subject.store.save(start(old), expected_version=old.version)

    assert subject.store.get("reused") == new
