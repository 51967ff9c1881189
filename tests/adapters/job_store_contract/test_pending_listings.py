"""The JobStore contract: a pending job that may use several pools is in every one's front and
count, as the same job, exactly while it is pending (adapters/pending_listing.py), whatever writes
race; and never anywhere else."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from smq_lambda.adapters.item_codec import job_order_key
from smq_lambda.adapters.pending_listing import listing_key
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import placements_of
from smq_lambda.errors import VersionConflict

from tests.adapters.builders import ALICE, G5, P5, job
from tests.adapters.job_store_contract.subjects import (
    ALL,
    NOW,
    Step,
    Subject,
    cancel,
    move,
    names,
    preempt,
    put,
    refuse,
    requeue,
    running,
)


def flexible(name: str, *types: str, minute: int = 0) -> Job:
    """A job preferring 2 instances of each of `types`, in order."""
    pinned = job(name, minute=minute)
    request = {
        **pinned.request,
        "ResourceConfig": {"InstancePreferences": [{"InstanceType": kind} for kind in types], "InstanceCount": 2},
    }
    placements = placements_of(request)
    return replace(pinned, request=request, placements=placements, demand=placements[0].demand)


def started(current: Job) -> Job:
    """pending → starting, a flexible job at its last preference."""
    placement = current.placements[-1] if current.placements else None
    return lifecycle.start(current, NOW, reason="fits", placement=placement)


def listed_in(subject: Subject, name: str, *pools: str) -> dict[str, int | None]:
    """Per pool, the version the job's listing item there shows (None: no listing item)."""
    found = {pool: subject.item(listing_key(pool, name)) for pool in pools}
    return {pool: None if item is None else int(item["version"]["N"]) for pool, item in found.items()}


SHAPES = {
    "heterogeneous": lambda name, minute=0: job(name, minute=minute, groups=[(P5, 2), (G5, 1)]),
    "flexible": lambda name, minute=0: flexible(name, P5, G5, minute=minute),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_pending_job_is_in_each_pools_front_and_count_as_the_same_job(subject: Subject, shape: str) -> None:
    for minute in range(3):
        put(subject.store, job(f"g5-{minute}", minute=minute))
    created = subject.store.create(SHAPES[shape]("multi", minute=5))
    explained = move(subject.store, "multi", lambda current: lifecycle.explain(current, NOW, "waits"))

    (in_p5,) = subject.store.pending_front(P5, 10)
    in_g5 = subject.store.pending_front(G5, 10)

    assert in_p5 == in_g5[-1] == replace(explained, request={}, history=())
    assert in_p5.version == explained.version == created.version + 1
    assert names(in_g5) == ["g5-0", "g5-1", "g5-2", "multi"]
    assert subject.store.count_pending(P5) == 1 and subject.store.count_pending(G5) == 4
    assert listed_in(subject, "multi", P5, G5) == {P5: None, G5: explained.version}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_listing_item_is_never_listed_read_or_held(subject: Subject, shape: str) -> None:
    put(subject.store, SHAPES[shape]("multi"))
    subject.store.create(SHAPES[shape]("ran", minute=1))
    move(subject.store, "ran", started, running, preempt, requeue)

    assert names(subject.store.list_jobs(states=ALL).jobs) == ["multi", "ran"]
    assert names(subject.store.list_jobs(states=ALL, owner=ALICE).jobs) == ["multi", "ran"]
    assert names(subject.store.list_jobs(states=ALL, pool=G5).jobs) == ["multi", "ran"]
    assert subject.store.in_use().live == []
    assert [entry.job.name for entry in subject.store.jobs_with_attempts_since(NOW, NOW)] == ["ran"]
    assert subject.store.get(listing_key(G5, "multi")) is None


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize(
    ("leave", "state"),
    [((started,), JobState.STARTING), ((cancel,), JobState.CANCELLED), ((started, refuse), JobState.FAILED)],
    ids=["start", "cancel", "lasting-refusal"],
)
def test_a_job_leaves_every_front_when_it_leaves_pending_and_returns_to_each(
    subject: Subject, shape: str, leave: tuple[Step, ...], state: JobState
) -> None:
    put(subject.store, SHAPES[shape]("multi"))

    left = move(subject.store, "multi", *leave)

    assert left.state is state
    assert subject.store.pending_front(P5, 10) == subject.store.pending_front(G5, 10) == []
    assert subject.store.count_pending(G5) == 0
    assert listed_in(subject, "multi", P5, G5) == {P5: None, G5: None}
    if state is JobState.STARTING:
        back = move(subject.store, "multi", running, preempt, requeue)
        assert subject.store.pending_front(P5, 10) == subject.store.pending_front(G5, 10) == [back]
        assert listed_in(subject, "multi", G5) == {G5: back.version}


@pytest.mark.parametrize(
    ("steps", "in_p5", "in_g5"),
    [((), True, True), ((started,), False, True), ((started, running), False, True), ((cancel,), True, False)],
    ids=["pending", "starting", "running", "cancelled"],
)
def test_a_pool_filter_lists_a_pending_job_in_each_pool_it_waits_in_and_any_other_in_the_pool_it_holds(
    subject: Subject, steps: tuple[Step, ...], in_p5: bool, in_g5: bool
) -> None:
    put(subject.store, flexible("multi", P5, G5))
    move(subject.store, "multi", *steps)

    listed = {pool: names(subject.store.list_jobs(states=ALL, pool=pool).jobs) for pool in (P5, G5)}

    assert listed == {P5: ["multi"] if in_p5 else [], G5: ["multi"] if in_g5 else []}


def test_a_reprioritized_job_moves_in_every_front(subject: Subject) -> None:
    put(subject.store, job("g5-first", minute=0))
    put(subject.store, job("hetero", minute=1, groups=[(P5, 2), (G5, 1)]))

    move(subject.store, "hetero", lambda current: lifecycle.reprioritize(current, NOW, 5, by=ALICE))

    assert names(subject.store.pending_front(G5, 10)) == ["hetero", "g5-first"]
    assert subject.store.count_pending(G5, after=job_order_key(subject.store.pending_front(G5, 10)[0])) == 1


def test_a_finished_name_submitted_again_is_listed_in_each_pool(subject: Subject) -> None:
    put(subject.store, job("reused", groups=[(P5, 2), (G5, 1)]), JobState.CANCELLED)

    again = subject.store.create(job("reused", minute=9, groups=[(P5, 2), (G5, 1)], job_id="again"))

    assert again.earlier_job_ids
    assert subject.store.pending_front(G5, 10) == [replace(again, earlier_job_ids=())]
    assert listed_in(subject, "reused", G5) == {G5: 1}


def test_a_duplicate_save_changes_no_listing_item(subject: Subject) -> None:
    created = subject.store.create(job("hetero", groups=[(P5, 2), (G5, 1)]))
    explained = subject.store.save(lifecycle.explain(created, NOW, "waits"), expected_version=1)

    with pytest.raises(VersionConflict):
        subject.store.save(started(created), expected_version=1)

    assert listed_in(subject, "hetero", G5) == {G5: explained.version}
    assert subject.store.pending_front(G5, 10) == [explained]


@pytest.mark.usefixtures("atomic_moto")
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_concurrent_writers_leave_the_listing_items_as_the_winner_wrote_them(subject: Subject, shape: str) -> None:
    """Half the writers start the job, half explain its wait, all from one version: one wins, and
    its listing item exists exactly when the winner left the job pending, at the winner's version."""
    created = subject.store.create(SHAPES[shape]("multi"))
    writers = 8
    barrier = threading.Barrier(writers)
    outcomes = [
        started(created) if index % 2 else lifecycle.explain(created, NOW, f"writer {index}")
        for index in range(writers)
    ]
    winners: list[int] = []

    def write(index: int) -> None:
        barrier.wait()
        try:
            subject.store.save(outcomes[index], expected_version=created.version)
        except VersionConflict:
            return
        winners.append(index)

    threads = [threading.Thread(target=write, args=(index,)) for index in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    (winner,) = winners
    stored = subject.store.get("multi")
    assert stored == outcomes[winner]
    pending = stored is not None and stored.state is JobState.PENDING
    assert listed_in(subject, "multi", G5) == {G5: 2 if pending else None}
    assert subject.store.pending_front(G5, 10) == ([stored] if pending else [])
