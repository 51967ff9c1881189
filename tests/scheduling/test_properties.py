"""Properties of one pass over random snapshots (hypothesis); the rules are in invariants.py."""

from __future__ import annotations

import copy
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot, UnpooledPolicy

from .builders import G5, NOW, P5, T0, TRN, JobBuilder
from .invariants import check_pass

STATES = [JobState.PENDING] * 4 + [
    JobState.STARTING,
    JobState.RUNNING,
    JobState.RUNNING,
    JobState.PREEMPTING,
    JobState.STOPPING,
]


@st.composite
def configs(draw: st.DrawFn) -> SchedulerConfig:
    pooled = draw(st.lists(st.sampled_from([P5, G5]), min_size=1, max_size=2, unique=True))
    return SchedulerConfig(
        pools={pool: draw(st.integers(0, 6)) for pool in pooled},
        unpooled=draw(st.sampled_from(list(UnpooledPolicy))),
        backfill=draw(st.booleans()),
    )


PRIORITIES = st.integers(0, 3)
SUBMITTED = st.integers(0, 20)
DEMANDS = st.dictionaries(st.sampled_from([P5, G5, TRN]), st.integers(1, 4), min_size=1, max_size=2)
ANY_STATE = st.sampled_from(STATES)
PAST_ATTEMPTS = st.integers(0, 2)
REASONS = st.sampled_from([None, "preempted", "fits: stale"])
BACKOFF = st.none() | st.integers(-60, 60)
STARTED_MINUTES_AGO = st.integers(0, 600)
EXTERNAL = st.dictionaries(st.sampled_from([P5, G5]), st.integers(0, 3), max_size=2)


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    """Up to 12 jobs in any state; strategies are built once above (building them per draw is slow)."""
    jobs = []
    for number in range(draw(st.integers(0, 12))):
        builder = JobBuilder(f"job{number}", T0 + timedelta(minutes=draw(SUBMITTED))).priority(draw(PRIORITIES))
        for pool, count in draw(DEMANDS).items():
            builder.needs(count, pool)
        state = draw(ANY_STATE)
        builder.past_attempts(draw(PAST_ATTEMPTS))
        if state is JobState.PENDING:
            builder.reason(draw(REASONS))
            backoff = draw(BACKOFF)
            if backoff is not None:
                builder.backoff(NOW + timedelta(seconds=backoff))
        else:
            builder.live(state, NOW - timedelta(minutes=draw(STARTED_MINUTES_AGO)), backfill=draw(st.booleans()))
        jobs.append(builder.build())
    return Snapshot(jobs=tuple(jobs), external_usage=draw(EXTERNAL))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=snapshots(), config=configs())
def test_every_pass_keeps_the_invariants(snapshot: Snapshot, config: SchedulerConfig) -> None:
    """No over-commit, one action per job, preemptions only of lower or later-backfilled jobs, a
    minimal preempted set, strict order unless backfilling, and no head left waiting on a job it
    could reclaim."""
    check_pass(snapshot, config, decide(snapshot, NOW, config), NOW)


@settings(max_examples=100, deadline=None)
@given(snapshot=snapshots(), config=configs())
def test_decide_is_pure(snapshot: Snapshot, config: SchedulerConfig) -> None:
    before = copy.deepcopy(snapshot)

    first = decide(snapshot, NOW, config)
    second = decide(snapshot, NOW, config)

    assert snapshot == before
    assert first == second


@settings(max_examples=100, deadline=None)
@given(snapshot=snapshots(), config=configs())
def test_backfill_off_never_starts_a_job_ahead_of_a_waiting_one(snapshot: Snapshot, config: SchedulerConfig) -> None:
    """The same snapshot with backfill off: every start is a plain one (checked in order by check_pass)."""
    strict = SchedulerConfig(pools=config.pools, unpooled=config.unpooled, backfill=False)

    actions = decide(snapshot, NOW, strict)

    check_pass(snapshot, strict, actions, NOW)
    assert not any(getattr(action, "backfill", False) for action in actions)
