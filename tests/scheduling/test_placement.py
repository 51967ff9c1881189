"""The placement phase: a flexible job starts at the first preference that fits, else the first that
can be made to fit, else waits in every pool it prefers, with a reason naming each preference."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from smq_lambda.domain.costs.costs import attempt_cost, estimated_cost
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.states import LIVE_STATES
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.scheduling.actions import ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.decide import decide

from tests.scheduling.builders import G5, NOW, P5, TRN, apply, pools, queue

FLEX = ((P5, 2), (G5, 4))


def starts(actions: list) -> dict[str, Placement | None]:
    return {action.job_name: action.placement for action in actions if isinstance(action, StartJob)}


def test_a_flexible_job_starts_at_its_first_preference_when_it_fits() -> None:
    snapshot = queue().pending("flex", prefers=FLEX).build()
    actions = decide(snapshot, NOW, pools(p5=2, g5=4))
    assert starts(actions) == {"flex": Placement(P5, 2)}
    assert "at its instance preference 1 of 2 (2 × ml.p5.48xlarge)" in actions[0].reason


def test_it_starts_at_its_second_preference_when_the_first_is_full() -> None:
    snapshot = queue().running("busy", priority=5, needs={P5: 2}).pending("flex", prefers=FLEX).build()
    actions = decide(snapshot, NOW, pools(p5=2, g5=4))
    assert starts(actions) == {"flex": Placement(G5, 4)}
    assert "preference 2 of 2" in actions[0].reason


def test_room_made_in_the_first_preference_wins_over_a_later_one_that_fits() -> None:
    """'else the first that can be made to fit': no; a later preference that fits now comes first."""
    snapshot = queue().running("low", priority=0, needs={P5: 2}).pending("flex", priority=5, prefers=FLEX).build()
    actions = decide(snapshot, NOW, pools(p5=2, g5=4))
    assert starts(actions) == {"flex": Placement(G5, 4)}
    assert not [action for action in actions if isinstance(action, PreemptJob)]


def test_it_preempts_in_the_first_preference_where_room_can_be_made() -> None:
    snapshot = (
        queue()
        .running("high", priority=9, needs={P5: 2})
        .running("low", priority=0, needs={G5: 4})
        .pending("flex", priority=5, prefers=FLEX)
        .build()
    )
    actions = decide(snapshot, NOW, pools(p5=2, g5=4))
    assert [(a.job_name, a.for_job) for a in actions if isinstance(a, PreemptJob)] == [("low", "flex")]
    assert starts(actions) == {}


def test_without_room_anywhere_it_waits_in_every_pool_naming_each_preference() -> None:
    snapshot = (
        queue()
        .running("a", priority=9, needs={P5: 2})
        .running("b", priority=9, needs={G5: 4})
        .pending("flex", priority=5, prefers=FLEX)
        .pending("small-p5", priority=1, needs={P5: 1})
        .pending("small-g5", priority=1, needs={G5: 1})
        .build()
    )
    actions = decide(snapshot, NOW, pools(p5=2, g5=4))
    assert starts(actions) == {}
    [why] = [a.reason for a in actions if isinstance(a, ExplainWait) and a.job_name == "flex"]
    assert why.startswith("waits for any of its 2 instance preferences: ")
    assert "1. 2 × ml.p5.48xlarge: 0 of 2 free" in why
    assert "2. 4 × ml.g5.xlarge: 0 of 4 free" in why


def test_it_holds_back_later_jobs_in_every_pool_it_waits_for() -> None:
    snapshot = (
        queue()
        .running("a", priority=9, needs={P5: 2})
        .running("b", priority=9, needs={G5: 3})
        .pending("flex", priority=5, prefers=FLEX)
        .pending("later", priority=1, needs={G5: 1})
        .build()
    )
    assert starts(decide(snapshot, NOW, pools(p5=2, g5=4))) == {}


def test_a_preference_larger_than_its_pool_is_never_chosen() -> None:
    snapshot = queue().pending("flex", prefers=((P5, 3), (G5, 4))).build()
    assert starts(decide(snapshot, NOW, pools(p5=2, g5=4))) == {"flex": Placement(G5, 4)}


def test_a_job_whose_every_preference_is_too_large_is_explained_and_blocks_nothing() -> None:
    snapshot = queue().pending("flex", prefers=((P5, 3), (G5, 5))).pending("next", needs={P5: 1}).build()
    actions = decide(snapshot, NOW, pools(p5=2, g5=4))
    assert starts(actions) == {"next": Placement(P5, 1)}


def test_a_preference_behind_a_waiting_head_is_passed_over() -> None:
    snapshot = (
        queue()
        .running("a", priority=9, needs={P5: 2})
        .pending("head", priority=5, needs={P5: 1})
        .pending("flex", priority=4, prefers=((P5, 1), (G5, 1)))
        .build()
    )
    assert starts(decide(snapshot, NOW, pools(p5=2, g5=4))) == {"flex": Placement(G5, 1)}


def test_a_live_flexible_job_holds_only_the_pool_it_was_placed_in() -> None:
    snapshot = (
        queue()
        .running("flex", prefers=FLEX, at=2)
        .pending("p5-job", needs={P5: 2})
        .pending("g5-job", needs={G5: 1})
        .build()
    )
    assert starts(decide(snapshot, NOW, pools(p5=2, g5=4))) == {"p5-job": Placement(P5, 2)}


def test_a_pinned_job_starts_at_its_own_type_and_count() -> None:
    snapshot = queue().running("a", needs={P5: 1}).pending("b", needs={P5: 2}).pending("c", needs={G5: 1}).build()
    actions = decide(snapshot, NOW, pools(p5=2, g5=4))
    assert starts(actions) == {"c": Placement(G5, 1)}


TYPES = (P5, G5, TRN)
preference = st.tuples(st.sampled_from(TYPES), st.integers(1, 3))
job_spec = st.tuples(
    st.integers(0, 3),
    st.lists(preference, min_size=1, max_size=3, unique_by=lambda p: p[0]),
    st.booleans(),
)


@settings(max_examples=settings.default.max_examples * 150 // 100, deadline=None)
@given(specs=st.lists(job_spec, min_size=1, max_size=8), capacities=st.tuples(*(st.integers(1, 4) for _ in TYPES)))
def test_passes_never_over_commit_a_pool_and_each_job_holds_one_placement(specs, capacities) -> None:
    config = pools(**dict(zip(TYPES, capacities, strict=True)))
    builder = queue()
    for number, (priority, prefs, flexible) in enumerate(specs):
        if flexible:
            builder.pending(f"j{number}", priority=priority, prefers=tuple(prefs))
        else:
            builder.pending(f"j{number}", priority=priority, needs=dict(prefs[:1]))
    snapshot = builder.build()
    for _ in range(3):
        actions = decide(snapshot, NOW, config)
        snapshot = apply(snapshot, actions, NOW)
        held: Counter[str] = Counter()
        for job in snapshot.jobs:
            if job.state in LIVE_STATES:
                held.update(job.demand)
                if job.placements:
                    assert job.where.selected is not None and dict(job.demand) == job.where.selected.demand
                    assert len(job.demand) == 1
        for pool, count in held.items():
            assert count <= config.pools[pool]


def test_an_attempt_is_priced_at_the_placement_it_ran_on_even_once_requeued() -> None:
    snapshot = queue().pending("flex", prefers=FLEX).build()
    [job] = snapshot.jobs
    started = lifecycle.start(job, NOW, reason="fits", placement=Placement(G5, 4))
    assert started.where.instance_types == {G5: 4}
    requeued = lifecycle.requeue(started, NOW + timedelta(hours=1), outcome="preempted", reason="preempted")
    assert requeued.demand == {P5: 2} and requeued.where.instance_types == {P5: 2}
    attempt = requeued.attempts[-1]
    prices = {P5: 100.0, G5: 1.0}
    cost = attempt_cost(requeued, attempt, billable_s=3600, training_s=3600, ended_at=NOW, prices=prices)
    assert cost.spend_usd == 4.0
    assert estimated_cost(started, prices, expected_s=3600).usd == 4.0


def test_behind_heads_in_every_pool_it_is_backfilled_where_it_fits_now() -> None:
    """The simulation found it: a flexible job behind heads in both pools used to wait at its first
    preference (no instance free there) while its second would fit the instances idle beside a head."""
    snapshot = (
        queue()
        .running("a", priority=9, needs={P5: 2})
        .running("b", priority=9, needs={G5: 4})
        .pending("head-g5", priority=5, needs={G5: 8})
        .pending("head-p5", priority=5, needs={P5: 1})
        .pending("flex", priority=4, prefers=FLEX)
        .build()
    )
    actions = decide(snapshot, NOW, pools(backfill=True, p5=2, g5=8))
    assert starts(actions) == {"flex": Placement(G5, 4)}
    assert next(a for a in actions if isinstance(a, StartJob)).backfill
    assert starts(decide(snapshot, NOW, pools(p5=2, g5=8))) == {}
