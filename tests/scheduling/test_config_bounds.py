"""Every number of the configuration document is bounded (issue 19): a document the parser accepts
never breaks a pass. The two reported crashes (a minimum runtime of 10^15 s, a capacity of 2^63)
are refused naming the key, and a property throws documents with numbers around and far beyond
the bounds at the parser and runs a whole pass (queue fronts, decision, start estimates, usage decay)
over a random queue for each document it accepts."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from smq_lambda.domain.config.bounds import MAX_COUNT, MAX_INSTANCES, MAX_SECONDS
from smq_lambda.domain.config.config_document import ConfigDocumentError, QueueConfigDocument, parse_config_document
from smq_lambda.domain.config.teams import decay_usage, held_by_team
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.forecast.estimate import estimate_starts
from smq_lambda.scheduling.capacity import Ledger
from smq_lambda.scheduling.decide import decide_pass
from smq_lambda.scheduling.queue_front import front_sizes, team_front_sizes
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from .builders import G5, NOW, P5, T0, JobBuilder, apply

QUERY_LIMIT_MAX = 2**31 - 1
"""A DynamoDB Query's Limit (and far below what `itertools.islice` takes): a queue front is one."""
POOLS = [P5, G5]
TEAMS = ["a", "b"]
EXTREMES = [
    MAX_INSTANCES,
    MAX_INSTANCES + 1,
    MAX_COUNT,
    MAX_SECONDS,
    MAX_SECONDS + 1,
    2**31,
    2**63,
    10**15,
]


def scheduler_config(document: QueueConfigDocument, *, backfill: bool = False) -> SchedulerConfig:
    return SchedulerConfig(
        pools=document.pools,
        backfill=backfill,
        teams=document.teams,
        preemption=document.preemption,
        aging=document.aging,
    )


def one_pass(snapshot: Snapshot, config: SchedulerConfig) -> None:
    """What the scheduler computes in a pass from the configuration: the queue fronts it reads, the
    decision, the start estimates over the queue it leaves, and the teams' decayed usage."""
    ledger = Ledger.measure(snapshot, config)
    fronts = [
        *front_sizes(config.pools, ledger, backfill=config.backfill).values(),
        *team_front_sizes(config.pools, ledger, config.teams, backfill=config.backfill).values(),
    ]
    assert all(0 <= size <= QUERY_LIMIT_MAX for size in fronts), fronts
    decision = decide_pass(snapshot, NOW, config)
    estimate_starts(apply(snapshot, decision.actions, NOW), NOW, config)
    decay_usage(snapshot.team_usage, 3600.0, held_by_team(snapshot.jobs, config.teams), config.teams.usage_half_life_s)


def queue_at_quota(config: SchedulerConfig) -> Snapshot:
    """Team a's two running jobs and a higher-priority pending one: the pass weighs protection
    (min_runtime_s, max_preemptions) and aging."""
    jobs = (
        JobBuilder("a1", T0).team("a").priority(1).live(JobState.RUNNING, NOW - timedelta(minutes=5)).build(),
        JobBuilder("a2", T0).team("a").priority(1).past_attempts(2).live(JobState.RUNNING).build(),
        JobBuilder("a3", T0 - timedelta(days=3650)).team("a").priority(9).build(),
    )
    return Snapshot(jobs=jobs)


@pytest.mark.parametrize(
    ("document", "key"),
    [
        ({"pools": {P5: 2}, "preemption": {"min_runtime_s": 10**15}}, "preemption.min_runtime_s"),
        ({"pools": {P5: 2**63}}, f"pools.{P5}"),
        ({P5: 2**63}, P5),
        ({"pools": {P5: 2}, "quotas": {"a": {"instances": {P5: 1}, "borrow_limit": 2**63}}}, "quotas.a.borrow_limit"),
        ({"pools": {P5: 2}, "aging": {"per_hour": 1e308, "cap": 5}}, "aging.per_hour"),
        ({"pools": {P5: 2}, "aging": {"per_hour": 1, "cap": 2**63}}, "aging.cap"),
        ({"pools": {P5: 2}, "usage_half_life_s": 10**15}, "usage_half_life_s"),
        ({"pools": {P5: 2}, "preemption": {"max_preemptions": 2**63}}, "preemption.max_preemptions"),
    ],
)
def test_a_number_beyond_its_bound_is_refused_naming_its_key(document: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigDocumentError) as refused:
        parse_config_document(document, source="test")

    assert refused.value.path == key
    assert "must be" in refused.value.problem and "at most" in refused.value.problem


def test_every_number_at_its_bound_is_accepted_and_a_pass_runs() -> None:
    """The reported crashes were an OverflowError (min_runtime_s 10^15) and a ValueError reading a
    pool's front (capacity 2^63); at the bounds, the pass runs."""
    document = parse_config_document(
        {
            "pools": {P5: MAX_INSTANCES, G5: MAX_INSTANCES},
            "quotas": {"a": {"instances": {P5: MAX_INSTANCES}, "borrow_limit": MAX_INSTANCES}},
            "preemption": {"min_runtime_s": MAX_SECONDS, "max_preemptions": MAX_COUNT},
            "aging": {"per_hour": MAX_COUNT, "cap": MAX_COUNT},
            "usage_half_life_s": MAX_SECONDS,
        },
        source="test",
    )

    for backfill in (False, True):
        config = scheduler_config(document, backfill=backfill)
        one_pass(queue_at_quota(config), config)


counts = st.one_of(st.integers(0, 6), st.sampled_from(EXTREMES), st.integers(0, 2**70))
rates = st.one_of(st.integers(0, 6), st.sampled_from(EXTREMES), st.floats(allow_nan=True, allow_infinity=True))


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """Configuration documents whose numbers are mostly small, sometimes at or beyond a bound."""
    pools = draw(st.dictionaries(st.sampled_from(POOLS), counts, min_size=1))
    document: dict[str, Any] = {"pools": pools}
    quotas: dict[str, Any] = {}
    for team in draw(st.lists(st.sampled_from(TEAMS), unique=True)):
        held = draw(st.lists(st.sampled_from(list(pools)), unique=True))
        instances = {pool: draw(st.integers(0, pools[pool] // len(TEAMS)) | counts) for pool in held}
        quota: dict[str, Any] = {"instances": instances}
        quota["sharing"] = draw(st.sampled_from(["reserve", "lend", "lend_and_borrow"]))
        if quota["sharing"] == "lend_and_borrow" and draw(st.booleans()):
            quota["borrow_limit"] = draw(st.none() | counts)
        quotas[team] = quota
    if quotas:
        document["quotas"] = quotas
    if draw(st.booleans()):
        document["preemption"] = {"min_runtime_s": draw(counts), "max_preemptions": draw(st.none() | counts)}
    if draw(st.booleans()):
        document["aging"] = {"per_hour": draw(rates), "cap": draw(counts)}
    if draw(st.booleans()):
        document["usage_half_life_s"] = draw(counts)
    return document


@st.composite
def queues(draw: st.DrawFn, config: SchedulerConfig) -> Snapshot:
    """Up to 8 jobs of the document's pools (and one pool it does not have), pending or live, of
    any team, submitted and started from minutes to decades ago."""
    jobs = []
    ages = st.one_of(st.integers(0, 120), st.integers(0, 60 * 24 * 365 * 30))
    for number in range(draw(st.integers(0, 8))):
        submitted = NOW - timedelta(minutes=draw(ages))
        builder = JobBuilder(f"job{number}", submitted).priority(draw(st.integers(0, 9)))
        builder.team(draw(st.sampled_from([*TEAMS, None, "x"])))
        builder.needs(
            draw(st.integers(1, 4) | st.sampled_from([MAX_INSTANCES, MAX_INSTANCES + 1])),
            draw(st.sampled_from([*POOLS, "ml.c5.xlarge"])),
        )
        builder.past_attempts(draw(st.integers(0, 3)))
        state = draw(st.sampled_from([JobState.PENDING, JobState.RUNNING, JobState.PREEMPTING]))
        if state is not JobState.PENDING:
            started = max(NOW - timedelta(minutes=draw(ages)), submitted + timedelta(hours=1))
            builder.live(state, min(started, NOW))
        job = builder.build()
        runtime = draw(st.none() | st.integers(1, 28 * 86_400))
        jobs.append(replace(job, max_runtime_s=runtime, expected_duration_s=draw(st.none() | st.integers(1, 86_400))))
    usage = draw(st.dictionaries(st.sampled_from(TEAMS), st.floats(0, 1e15)))
    outside = draw(st.dictionaries(st.sampled_from(POOLS), st.integers(0, 4)))
    return Snapshot(jobs=tuple(jobs), external_usage=outside, team_usage=usage)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), value=documents(), backfill=st.booleans())
def test_a_pass_over_any_accepted_document_does_not_raise(
    data: st.DataObject, value: dict[str, Any], backfill: bool
) -> None:
    try:
        document = parse_config_document(value, source="test")
    except ConfigDocumentError:
        return
    config = scheduler_config(document, backfill=backfill)

    one_pass(data.draw(queues(config)), config)
