"""A pending job's listing items (adapters/pending_listing.py): which a write puts or deletes, in
every state, and that a queue front decodes one to the very job its own item shows."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from smq_lambda.adapters.item_codec import from_item, to_item
from smq_lambda.adapters.pending_listing import LISTED_ATTRIBUTES, listing_changes, listing_key, pending_job
from smq_lambda.domain.jobs.model import Attempt, Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import placements_of

from tests.adapters.builders import G5, P5, T0, job
from tests.support.aws import pending_index_attributes

TRN = "ml.trn1.32xlarge"


def flexible(name: str, *types: str) -> Job:
    """A job preferring 2 instances of each of `types`, in order (listed under the first)."""
    pinned = job(name)
    request = dict(pinned.request)
    request["ResourceConfig"] = {"InstancePreferences": [{"InstanceType": kind} for kind in types], "InstanceCount": 2}
    placements = placements_of(request)
    return replace(pinned, request=request, placements=placements, demand=placements[0].demand)


HETERO = job("hetero", priority=3, groups=[(P5, 2), (G5, 1), (TRN, 4)])
FLEXIBLE = flexible("flex", P5, G5, TRN)
OTHER_POOLS = {HETERO.name: [G5, TRN], FLEXIBLE.name: [G5, TRN]}


def _lived(pending: Job) -> Job:
    """`pending` with what a requeued job carries: an ended attempt, a reason, a team, a new version."""
    attempt = Attempt(1, f"{pending.name}-1", T0, T0, "preempted", "preempted for x")
    return replace(pending, version=7, attempts=(attempt,), reason="waits", team="vision", updated_at=T0)


def _indexed(item: dict[str, Any]) -> dict[str, Any]:
    """What a pending index holds of an item."""
    return {key: value for key, value in item.items() if key in pending_index_attributes()}


def test_the_listed_attributes_are_the_pending_projection_but_the_state() -> None:
    keys = {"name", "pending_pool", "pending_team", "order_key"}
    assert set(LISTED_ATTRIBUTES) == pending_index_attributes() - keys - {"state"}


@pytest.mark.parametrize("pending", [HETERO, FLEXIBLE], ids=["heterogeneous", "flexible"])
def test_a_pending_job_with_other_pools_has_a_listing_item_in_each_that_reads_as_the_job(pending: Job) -> None:
    lived = _lived(pending)
    item = to_item(lived, ttl_days=7)

    changes = listing_changes(lived, item)

    assert list(changes) == [listing_key(pool, lived.name) for pool in OTHER_POOLS[lived.name]]
    for pool, listed in zip(OTHER_POOLS[lived.name], changes.values(), strict=True):
        assert listed is not None
        assert listed["pending_pool"] == {"S": pool}
        assert listed["pending_team"] == {"S": f"{pool}#vision"}
        assert listed["order_key"] == item["order_key"]
        assert {"state", "owner_state", "attempt_end_day", "attempt_end", "request", "history"}.isdisjoint(listed)
        assert pending_job(_indexed(listed)) == pending_job(_indexed(item)) == lived
        assert pending_job(_indexed(listed)).version == 7


def test_a_listing_key_names_the_pool_and_the_job() -> None:
    assert listing_key(G5, "train-7") == f"#listing#{G5}#train-7"
    assert pending_job({**_indexed(to_item(HETERO, ttl_days=7))}).name == "hetero"


LEFT_PENDING = {JobState.STARTING, JobState.FAILED, JobState.CANCELLED}


@pytest.mark.parametrize("state", list(JobState))
@pytest.mark.parametrize("pending", [HETERO, FLEXIBLE], ids=["heterogeneous", "flexible"])
def test_a_write_puts_the_listing_items_while_pending_and_deletes_them_in_a_state_pending_leads_to(
    pending: Job, state: JobState
) -> None:
    written = replace(pending, state=state)

    changes = listing_changes(written, to_item(written, ttl_days=7))

    keys = [listing_key(pool, pending.name) for pool in OTHER_POOLS[pending.name]]
    if state is JobState.PENDING:
        assert list(changes) == keys and None not in changes.values()
    elif state in LEFT_PENDING:
        assert changes == dict.fromkeys(keys)
    else:
        assert changes == {}


@pytest.mark.parametrize("state", list(JobState))
@pytest.mark.parametrize(
    "single",
    [job("plain", pool=P5, instances=4), job("same-type-twice", groups=[(G5, 1), (G5, 2)]), flexible("one", G5, G5)],
    ids=["pinned", "groups-of-one-type", "preferences-of-one-type"],
)
def test_a_job_of_one_pool_never_has_listing_items(single: Job, state: JobState) -> None:
    written = replace(single, state=state)
    assert written.where.pools == (single.where.pool,)
    assert listing_changes(written, to_item(written, ttl_days=7)) == {}


def test_an_item_of_the_job_itself_decodes_as_the_codec_decodes_it() -> None:
    item = _indexed(to_item(_lived(HETERO), ttl_days=7))
    assert pending_job(item) == from_item(item)
