"""Warm pools in the pass: a matching job reuses one, never ahead of a job that comes first; a head
that lacks instances ends warm pools before anything is preempted; the keep-alive of a start is kept
only while a matching job waits."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from smq_lambda.domain.config.warm_pool_document import WarmPoolPolicy
from smq_lambda.domain.warm.warm_pools import REUSE_KEEP_ALIVE_S, WarmPool
from smq_lambda.scheduling.actions import ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.decide import Decision, decide_pass
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from tests.scheduling.builders import G5, NOW, P5, pools, queue
from tests.scheduling.test_quota_properties import quota_configs, quota_snapshots

KEY, OTHER = "k" * 64, "o" * 64


def warm(
    name: str = "left-1", count: int = 2, key: str = KEY, pool: str = P5, *, minutes: int = 10, released: bool = False
) -> WarmPool:
    return WarmPool(name, pool, pool, count, key, NOW + timedelta(minutes=minutes), released=released)


def keyed(snapshot: Snapshot, *warm_pools: WarmPool, **keys: str) -> Snapshot:
    """`snapshot` with `warm_pools` and each named job's warm key."""
    jobs = tuple(replace(job, warm_key=keys[job.name]) if job.name in keys else job for job in snapshot.jobs)
    return replace(snapshot, jobs=jobs, warm_pools=warm_pools)


def started(decision: Decision) -> dict[str, StartJob]:
    return {action.job_name: action for action in decision.actions if isinstance(action, StartJob)}


def released(decision: Decision) -> list[str]:
    return [release.training_job_name for release in decision.warm_releases]


def preempted(decision: Decision) -> list[str]:
    return [action.job_name for action in decision.actions if isinstance(action, PreemptJob)]


def test_a_matching_job_starts_on_the_warm_pool_its_instances_fill() -> None:
    snapshot = keyed(queue().pending("next", needs={P5: 2}).build(), warm(), next=KEY)
    decision = decide_pass(snapshot, NOW, pools(p5=2))
    assert list(started(decision)) == ["next"]
    assert started(decision)["next"].warm_pool == "left-1"
    assert "starts on the warm pool left-1 left (2 × ml.p5.48xlarge)" in started(decision)["next"].reason
    assert released(decision) == []


def test_a_job_that_does_not_match_ends_the_warm_pool_and_waits_for_its_instances() -> None:
    snapshot = keyed(queue().pending("other", needs={P5: 2}).build(), warm(), other=OTHER)
    decision = decide_pass(snapshot, NOW, pools(p5=2))
    assert started(decision) == {}
    assert released(decision) == ["left-1"]
    assert "ended for other" in decision.warm_releases[0].reason


def test_a_higher_priority_job_that_needs_the_instances_comes_before_a_matching_one() -> None:
    snapshot = queue().pending("match", priority=0, needs={P5: 2}).pending("urgent", priority=5, needs={P5: 2}).build()
    decision = decide_pass(keyed(snapshot, warm(), match=KEY), NOW, pools(p5=2))
    assert started(decision) == {}
    assert released(decision) == ["left-1"]


def test_a_job_ahead_that_fits_beside_the_warm_pool_leaves_it_to_the_matching_job() -> None:
    snapshot = queue().pending("urgent", priority=5, needs={P5: 1}).pending("match", needs={P5: 2}).build()
    decision = decide_pass(keyed(snapshot, warm(), match=KEY), NOW, pools(p5=3))
    assert list(started(decision)) == ["urgent", "match"]
    assert released(decision) == []


@pytest.mark.parametrize(
    ("job_key", "needs", "warm_pool", "why"),
    [
        (OTHER, 2, warm(), "another key"),
        (KEY, 1, warm(), "another count"),
        (KEY, 2, warm(pool=G5), "another pool"),
        (KEY, 2, warm(released=True), "ended by the queue"),
        (None, 2, warm(), "no key (no keep-alive, spot, groups)"),
    ],
)
def test_a_job_reuses_no_warm_pool_it_does_not_match(
    job_key: str | None, needs: int, warm_pool: WarmPool, why: str
) -> None:
    snapshot = queue().pending("job", needs={P5: needs}).build()
    snapshot = keyed(snapshot, warm_pool, **({"job": job_key} if job_key else {}))
    decision = decide_pass(snapshot, NOW, pools(p5=2, g5=2))
    assert not any(start.warm_pool for start in started(decision).values()), why


def test_the_warm_pool_that_ends_soonest_is_reused_first_and_ended_first() -> None:
    late, soon = warm("late", count=1, minutes=30), warm("soon", count=1, minutes=5)
    reuse = decide_pass(keyed(queue().pending("match").build(), late, soon, match=KEY), NOW, pools(p5=2))
    assert started(reuse)["match"].warm_pool == "soon"
    end = decide_pass(keyed(queue().pending("other").build(), late, soon, other=OTHER), NOW, pools(p5=2))
    assert released(end) == ["soon"]


def test_a_head_ends_warm_pools_before_it_preempts_anyone() -> None:
    snapshot = queue().running("low", priority=0, needs={P5: 2}).pending("urgent", priority=5, needs={P5: 2}).build()
    decision = decide_pass(keyed(snapshot, warm()), NOW, pools(p5=4))
    assert released(decision) == ["left-1"]
    assert preempted(decision) == []


def test_instances_of_an_ended_warm_pool_are_on_their_way_back() -> None:
    """The head waits for them; nothing is preempted nor ended again, nothing starts on them."""
    snapshot = (
        queue()
        .running("low", priority=0, needs={P5: 2})
        .pending("urgent", priority=5, needs={P5: 2})
        .pending("small")
        .build()
    )
    decision = decide_pass(keyed(snapshot, warm(released=True)), NOW, pools(p5=4))
    assert (preempted(decision), released(decision), started(decision)) == ([], [], {})


def test_warm_instances_are_held_in_their_pool() -> None:
    decision = decide_pass(keyed(queue().pending("small", needs={P5: 1}).build(), warm(count=2)), NOW, pools(p5=3))
    assert list(started(decision)) == ["small"]
    assert released(decision) == []


POLICY = WarmPoolPolicy(max_keep_alive_s=1800)


@pytest.mark.parametrize(
    ("waiting_key", "warm_pools", "policy", "expected"),
    [
        (KEY, (), POLICY, 1800),
        (OTHER, (), POLICY, 0),
        (None, (), POLICY, 0),
        (None, (warm(),), POLICY, REUSE_KEEP_ALIVE_S),
        (KEY, (warm(),), POLICY, 1800),
        (KEY, (), None, None),
    ],
)
def test_a_start_keeps_its_keep_alive_only_while_a_matching_job_waits(
    waiting_key: str | None, warm_pools: tuple[WarmPool, ...], policy: WarmPoolPolicy | None, expected: int | None
) -> None:
    snapshot = queue().pending("first", needs={P5: 2}).pending("second", needs={P5: 2}).build()
    keys = {"first": KEY, **({"second": waiting_key} if waiting_key else {})}
    config = replace(pools(p5=2), warm_pools=policy)
    decision = decide_pass(keyed(snapshot, *warm_pools, **keys), NOW, config)
    assert list(started(decision)) == ["first"]
    assert started(decision)["first"].keep_alive_s == expected


def test_a_matching_job_started_in_the_same_pass_is_not_waiting() -> None:
    snapshot = keyed(queue().pending("a", needs={P5: 1}).pending("b", needs={P5: 1}).build(), a=KEY, b=KEY)
    decision = decide_pass(snapshot, NOW, replace(pools(p5=2), warm_pools=POLICY))
    assert {name: start.keep_alive_s for name, start in started(decision).items()} == {"a": 0, "b": 0}


def test_a_job_without_a_warm_key_is_sent_as_submitted() -> None:
    snapshot = keyed(queue().pending("plain").pending("match").build(), match=KEY)
    decision = decide_pass(snapshot, NOW, replace(pools(p5=2), warm_pools=POLICY))
    assert started(decision)["plain"].keep_alive_s is None


# Properties over random queues with warm pools.

KEYS = st.sampled_from([KEY, OTHER, None])


@st.composite
def warm_queues(draw: st.DrawFn) -> tuple[Snapshot, SchedulerConfig]:
    capacity = draw(st.integers(1, 6))
    builder = queue()
    keys: dict[str, str] = {}
    held = 0
    for index in range(draw(st.integers(0, 3))):
        count = draw(st.integers(1, 3))
        if held + count <= capacity:
            builder.running(f"run{index}", priority=draw(st.integers(0, 3)), needs={P5: count})
            held += count
    warm_pools = []
    for index in range(draw(st.integers(0, 3))):
        count = draw(st.integers(1, 3))
        if held + count <= capacity:
            warm_pools.append(
                warm(
                    f"warm{index}",
                    count,
                    draw(st.sampled_from([KEY, OTHER])),
                    minutes=draw(st.integers(1, 60)),
                    released=draw(st.booleans()),
                )
            )
            held += count
    for index in range(draw(st.integers(1, 6))):
        name = f"job{index}"
        builder.pending(name, priority=draw(st.integers(0, 3)), needs={P5: draw(st.integers(1, capacity))})
        if (key := draw(KEYS)) is not None:
            keys[name] = key
    config = replace(pools(p5=capacity, backfill=draw(st.booleans())), warm_pools=POLICY)
    return keyed(builder.build(), *warm_pools, **keys), config


@settings(max_examples=settings.default.max_examples * 300 // 100, deadline=None)
@given(warm_queues())
def test_no_pool_is_over_committed_counting_warm_instances(case: tuple[Snapshot, SchedulerConfig]) -> None:
    snapshot, config = case
    decision = decide_pass(snapshot, NOW, config)
    jobs = {job.name: job for job in snapshot.jobs}
    starts = started(decision)
    reused = {name for name, start in starts.items() if start.warm_pool is not None}
    held = sum(job.where.instances for job in snapshot.jobs if job.is_live)
    new = sum(jobs[name].where.instances for name in starts)
    warm_left = sum(warm.count for warm in snapshot.warm_pools) - sum(jobs[name].where.instances for name in reused)
    assert held + new + warm_left <= config.pools[P5]


@settings(max_examples=settings.default.max_examples * 200 // 100, deadline=None)
@given(st.data())
def test_with_team_quotas_no_pool_is_over_committed_counting_warm_instances(data: st.DataObject) -> None:
    config = replace(data.draw(quota_configs()), warm_pools=POLICY)
    snapshot = data.draw(quota_snapshots(config))
    free = config.pools[P5] - sum(job.where.instances for job in snapshot.jobs if job.is_live)
    warm_pools = []
    for index in range(data.draw(st.integers(0, 2))):
        count = data.draw(st.integers(1, 2))
        if count <= free:
            warm_pools.append(warm(f"warm{index}", count, data.draw(st.sampled_from([KEY, OTHER]))))
            free -= count
    keys = {job.name: data.draw(st.sampled_from([KEY, OTHER])) for job in snapshot.jobs if not job.is_live}
    snapshot = keyed(snapshot, *warm_pools, **keys)
    decision = decide_pass(snapshot, NOW, config)
    jobs = {job.name: job for job in snapshot.jobs}
    starts = started(decision)
    reused = sum(jobs[name].where.instances for name, start in starts.items() if start.warm_pool is not None)
    held = sum(job.where.instances for job in snapshot.jobs if job.is_live)
    new = sum(jobs[name].where.instances for name in starts)
    assert held + new + sum(pool.count for pool in warm_pools) - reused <= config.pools[P5]


@settings(max_examples=settings.default.max_examples * 300 // 100, deadline=None)
@given(warm_queues())
def test_a_job_reuses_a_warm_pool_only_when_every_job_ahead_of_it_started(
    case: tuple[Snapshot, SchedulerConfig],
) -> None:
    snapshot, config = case
    decision = decide_pass(snapshot, NOW, config)
    starts = started(decision)
    pending = sorted((job for job in snapshot.jobs if not job.is_live), key=lambda job: job.order)
    for index, job in enumerate(pending):
        if job.name in starts and starts[job.name].warm_pool is not None:
            assert all(ahead.name in starts for ahead in pending[:index]), job.name
            assert job.warm_key is not None


@settings(max_examples=settings.default.max_examples * 300 // 100, deadline=None)
@given(warm_queues())
def test_keep_alive_is_kept_only_while_a_matching_job_waits(case: tuple[Snapshot, SchedulerConfig]) -> None:
    snapshot, config = case
    decision = decide_pass(snapshot, NOW, config)
    starts = started(decision)
    waiting = Counter(job.warm_key for job in snapshot.jobs if not job.is_live and job.name not in starts)
    for name, start in starts.items():
        job = next(job for job in snapshot.jobs if job.name == name)
        if job.warm_key is None:
            assert start.keep_alive_s is None
        elif waiting[job.warm_key]:
            assert start.keep_alive_s == POLICY.max_keep_alive_s
        else:
            assert start.keep_alive_s == (0 if start.warm_pool is None else REUSE_KEEP_ALIVE_S)
    assert all(not isinstance(action, ExplainWait) or action.job_name not in starts for action in decision.actions)


def placed_keys(snapshot: Snapshot, name: str, *keys: str | None) -> Snapshot:
    """`snapshot` with the flexible job `name`'s placements keyed `keys`, in order (as submission keys each)."""
    jobs = tuple(
        replace(job, placements=tuple(replace(p, warm_key=key) for p, key in zip(job.placements, keys, strict=True)))
        if job.name == name
        else job
        for job in snapshot.jobs
    )
    return replace(snapshot, jobs=jobs)


@pytest.mark.parametrize(("second_key", "reused"), [(KEY, True), (OTHER, False), (None, False)])
def test_a_flexible_job_reuses_a_warm_pool_of_its_second_preference_when_the_first_is_full(
    second_key: str | None, reused: bool
) -> None:
    built = queue().running("big", priority=9, needs={P5: 2}).pending("flex", prefers=((P5, 2), (G5, 2))).build()
    snapshot = placed_keys(replace(built, warm_pools=(warm(pool=G5),)), "flex", KEY, second_key)

    decision = decide_pass(snapshot, NOW, pools(p5=2, g5=2))

    start = started(decision).get("flex")
    if reused:
        assert start is not None and start.placement is not None
        assert (start.warm_pool, start.placement.instance_type) == ("left-1", G5)
    else:
        assert start is None


@pytest.mark.parametrize(("waiting_key", "expected"), [(KEY, 1800), (OTHER, 0)])
def test_a_flexible_start_keeps_its_keep_alive_while_a_job_matching_its_placement_waits(
    waiting_key: str, expected: int
) -> None:
    built = queue().pending("flex", prefers=((P5, 2), (G5, 2))).pending("next", needs={G5: 2}).build()
    snapshot = keyed(placed_keys(built, "flex", OTHER, KEY), next=waiting_key)

    decision = decide_pass(snapshot, NOW, replace(pools(p5=1, g5=2), warm_pools=POLICY))

    assert list(started(decision)) == ["flex"]
    assert started(decision)["flex"].keep_alive_s == expected


@pytest.mark.parametrize(
    ("pending", "expected"),
    [
        ((), ["left-1"]),
        ((("match", KEY, 2),), []),
        ((("other-key", OTHER, 2),), ["left-1"]),
        ((("other-count", KEY, 1),), ["left-1"]),
    ],
)
def test_with_a_policy_a_warm_pool_no_waiting_job_matches_is_ended(
    pending: tuple[tuple[str, str, int], ...], expected: list[str]
) -> None:
    """The keep-alive was decided when its job started; a warm pool whose match started elsewhere
    since, or was cancelled, bills for nothing: the benchmark's idle warm hours were 0.196 of the
    reused ones on a sweep's last jobs without this rule."""
    builder = queue().running("busy", needs={P5: 3})
    for name, _, count in pending:
        builder.pending(name, needs={P5: count})
    keys = {name: key for name, key, _ in pending}
    snapshot = keyed(builder.build(), warm(), **keys)
    assert released(decide_pass(snapshot, NOW, replace(pools(p5=5), warm_pools=POLICY))) == expected


def test_without_a_policy_a_warm_pool_nobody_needs_is_kept_as_submitted() -> None:
    snapshot = keyed(queue().running("busy", needs={P5: 3}).build(), warm())
    assert released(decide_pass(snapshot, NOW, pools(p5=5))) == []


def test_a_flexible_job_ends_a_warm_pool_it_does_not_match_rather_than_wait_in_every_pool() -> None:
    """Its first preference's pool is busy, its second's held warm by a pool it does not match:
    ending that warm pool makes room, as it would for a pinned job (rule 2), so it waits there
    for the instances coming back instead of waiting everywhere."""
    snapshot = (
        queue()
        .running("busy", priority=9, needs={G5: 4})
        .pending("flex", priority=5, prefers=((G5, 4), (P5, 2)))
        .build()
    )
    decision = decide_pass(keyed(snapshot, warm(key=OTHER)), NOW, pools(p5=2, g5=4))
    assert released(decision) == ["left-1"]
    assert started(decision) == {}
