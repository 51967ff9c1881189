"""Purchase options: a spot job is placed on spot first, and on demand only once it has waited
`on_demand_after_s` or its type's interruption rate is above the adaptive limit; a spot-only job
never; without a `spot` section nothing changes."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from smq_lambda.domain.config.spot_document import AdaptiveSpot, SpotSection
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import LIVE_STATES
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import Purchase, spot_pool
from smq_lambda.scheduling.actions import ExplainWait, StartJob
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.purchase_options import listed_fronts, offer, requeued_at
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from tests.scheduling.builders import G5, NOW, P5, T0, apply, queue

G5_SPOT = spot_pool(G5)
ON_SPOT = Placement(G5, 2, pool=G5_SPOT, spot=True)
ON_DEMAND = Placement(G5, 2)


def config(
    *, on_demand: int = 4, spot: int = 4, after: int | None = None, limit: float | None = None
) -> SchedulerConfig:
    """G5 with an on-demand pool and a spot pool; P5 with one pool (spot and on demand together)."""
    section = SpotSection(
        pools={G5: spot},
        on_demand_after_s=after,
        adaptive=None if limit is None else AdaptiveSpot(max_interruptions_per_hour=limit),
    )
    return SchedulerConfig(pools={G5: on_demand, G5_SPOT: spot, P5: 2}, spot=section)


def with_purchase(snapshot: Snapshot, purchase: Purchase = Purchase.SPOT, *names: str) -> Snapshot:
    jobs = tuple(replace(job, purchase=purchase) if not names or job.name in names else job for job in snapshot.jobs)
    return replace(snapshot, jobs=jobs)


def starts(actions: list) -> dict[str, Placement | None]:
    return {action.job_name: action.placement for action in actions if isinstance(action, StartJob)}


def reasons(actions: list) -> dict[str, str]:
    return {action.job_name: action.reason for action in actions if isinstance(action, ExplainWait)}


SPOT_FULL = queue().running("on-spot", needs={G5_SPOT: 4}).pending("spot", needs={G5: 2}).build()
"""The spot pool is full (a running job holds it all); the on-demand pool is free."""


@pytest.mark.parametrize(
    ("snapshot", "cfg", "rates", "started"),
    [
        # spot first, in the type's spot pool, though on demand is free too
        (queue().pending("spot", needs={G5: 2}).build(), config(after=0), {}, ON_SPOT),
        # spot full, not waited long enough: waits (none started)
        (SPOT_FULL, config(after=7200), {}, None),
        # spot full, waited longer than on_demand_after_s (submitted an hour ago): on demand
        (SPOT_FULL, config(after=1800), {}, ON_DEMAND),
        # no on_demand_after_s: never for waiting
        (SPOT_FULL, config(), {}, None),
        # the type's rate above the limit: on demand directly, though spot is free
        (queue().pending("spot", needs={G5: 2}).build(), config(limit=0.5), {G5: 0.51}, ON_DEMAND),
        # at the limit, or another type's rate above it: spot
        (queue().pending("spot", needs={G5: 2}).build(), config(limit=0.5), {G5: 0.5}, ON_SPOT),
        (queue().pending("spot", needs={G5: 2}).build(), config(limit=0.5), {P5: 9.0}, ON_SPOT),
        # a type without a spot pool: spot in its one pool
        (queue().pending("spot", needs={P5: 2}).build(), config(after=0), {}, Placement(P5, 2, spot=True)),
    ],
)
def test_where_a_spot_job_starts(
    snapshot: Snapshot, cfg: SchedulerConfig, rates: dict, started: Placement | None
) -> None:
    snapshot = replace(with_purchase(snapshot, Purchase.SPOT, "spot"), spot_rates=rates)
    assert starts(decide(snapshot, NOW, cfg)).get("spot") == started


@pytest.mark.parametrize("rates", [{}, {G5: 100.0}])
def test_a_spot_only_job_never_goes_on_demand(rates: dict) -> None:
    snapshot = replace(with_purchase(SPOT_FULL, Purchase.SPOT_ONLY, "spot"), spot_rates=rates)
    actions = decide(snapshot, NOW, config(after=0, limit=0.5))
    assert "spot" not in starts(actions)


def test_the_reason_of_a_job_waiting_for_spot_says_when_it_may_go_on_demand() -> None:
    snapshot = with_purchase(SPOT_FULL, Purchase.SPOT, "spot")
    reason = reasons(decide(snapshot, NOW, config(after=7200)))["spot"]
    assert reason.endswith("may go on demand from 2025-03-01T11:01:00Z")


def test_the_wait_for_on_demand_counts_from_the_last_requeue() -> None:
    [job] = with_purchase(queue().pending("spot", needs={G5: 2}).build()).jobs
    started = lifecycle.start(job, NOW, reason="fits", placement=ON_SPOT)
    requeued = lifecycle.requeue(started, NOW + timedelta(minutes=5), outcome=AttemptOutcome.PREEMPTED, reason="x")
    assert requeued_at(job) == T0
    assert requeued_at(requeued) == NOW + timedelta(minutes=5)
    section = SpotSection(pools={G5: 4}, on_demand_after_s=600)
    assert offer(requeued, NOW + timedelta(minutes=14), section, {}).job.placements == (ON_SPOT,)
    assert offer(requeued, NOW + timedelta(minutes=15), section, {}).job.placements == (ON_SPOT, ON_DEMAND)


def test_a_flexible_spot_job_tries_every_preference_on_spot_before_any_on_demand() -> None:
    [job] = with_purchase(queue().pending("flex", prefers=((G5, 2), (P5, 1))).build()).jobs
    section = SpotSection(pools={G5: 4}, on_demand_after_s=0)
    assert offer(job, NOW, section, {}).job.placements == (ON_SPOT, Placement(P5, 1, spot=True), ON_DEMAND)


@pytest.mark.parametrize("purchase", list(Purchase))
def test_heterogeneous_and_on_demand_jobs_pass_unchanged(purchase: Purchase) -> None:
    [job] = with_purchase(queue().pending("groups", needs={G5: 1, P5: 1}).build(), purchase).jobs
    assert offer(job, NOW, SpotSection(pools={G5: 4}, on_demand_after_s=0), {G5: 9.0}).job == job


def test_without_a_spot_section_a_spot_job_decides_as_an_on_demand_one_in_the_types_pool() -> None:
    snapshot = (
        queue().running("a", needs={G5: 3}).pending("b", needs={G5: 2}).pending("c", priority=3, needs={G5: 1}).build()
    )
    cfg = SchedulerConfig(pools={G5: 4})
    as_spot, as_on_demand = decide(with_purchase(snapshot), NOW, cfg), decide(snapshot, NOW, cfg)
    assert [_cold(action) for action in as_spot] == [_cold(action) for action in as_on_demand]
    [start] = [action for action in as_spot if isinstance(action, StartJob)]
    assert start.placement == Placement(G5, 1, spot=True)


def _cold(action: object) -> object:
    """`action` without its placement, when it is a start."""
    return replace(action, placement=None) if isinstance(action, StartJob) else action


job_spec = st.tuples(
    st.integers(0, 3),  # priority
    st.sampled_from((G5, P5)),
    st.integers(1, 3),  # instances
    st.sampled_from(list(Purchase)),
    st.integers(0, 90),  # minutes before NOW it was submitted
)


@settings(max_examples=settings.default.max_examples * 150 // 100, deadline=None)
@given(
    specs=st.lists(job_spec, min_size=1, max_size=8),
    capacities=st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(1, 4)),
    after=st.none() | st.integers(0, 7200),
    limit=st.none() | st.floats(0, 2),
    rate=st.floats(0, 3),
)
def test_on_demand_only_when_a_condition_holds_and_no_pool_is_over_committed(
    specs, capacities, after, limit, rate
) -> None:
    on_demand, spot, p5 = capacities
    section = SpotSection(
        pools={G5: spot}, on_demand_after_s=after, adaptive=None if limit is None else AdaptiveSpot(limit)
    )
    cfg = SchedulerConfig(pools={G5: on_demand, G5_SPOT: spot, P5: p5}, spot=section)
    builder = queue()
    for number, (priority, kind, count, _, _) in enumerate(specs):
        builder.pending(f"j{number}", priority=priority, needs={kind: count})
    jobs = tuple(
        replace(job, purchase=purchase, submitted_at=NOW - timedelta(minutes=minutes))
        for job, (_, _, _, purchase, minutes) in zip(builder.build().jobs, specs, strict=True)
    )
    snapshot = Snapshot(jobs=jobs, spot_rates={G5: rate})
    for _ in range(3):
        actions = decide(snapshot, NOW, cfg)
        for action in starts(actions).items():
            name, placement = action
            job = next(job for job in snapshot.jobs if job.name == name)
            if placement is None or placement.spot or not job.purchase.spot:
                continue
            waited = after is not None and NOW - requeued_at(job) >= timedelta(seconds=after)
            interrupted_often = limit is not None and placement.instance_type == G5 and rate > limit
            never_on_spot = after is not None and placement.instance_type == G5 and placement.count > spot
            assert job.purchase.allows_on_demand and (waited or interrupted_often or never_on_spot)
        snapshot = apply(snapshot, actions, NOW)
        held: Counter[str] = Counter()
        for job in snapshot.jobs:
            if job.state in LIVE_STATES:
                held.update(job.demand)
                assert job.where.selected is not None
                assert job.where.selected.spot == (
                    job.where.selected.pool == G5_SPOT or (job.where.pool == P5 and job.purchase.spot)
                )
        for pool, count in held.items():
            assert count <= cfg.pools[pool]


def test_a_spot_pools_front_is_read_from_its_types_listing() -> None:
    assert listed_fronts({G5: 3, G5_SPOT: 21, P5: 2}) == {G5: 24, P5: 2}
    assert listed_fronts({(G5_SPOT, "vision"): 5, (G5, "vision"): 1, (G5, ""): 2}) == {(G5, "vision"): 6, (G5, ""): 2}
