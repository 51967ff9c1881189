"""Flexible jobs in the simulator: where they start, how long they train there, the progress they
keep when they move, what the baselines do with them, and the placement metrics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from smq_lambda.replay.trace_job import TraceJob, TracePreference
from smq_lambda.scheduling.actions import Action
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.simulation.engine import Result, Timing, simulate
from smq_lambda.simulation.policies import PolicyName

P5, G5 = "ml.p5.48xlarge", "ml.g5.48xlarge"
POOLS = {P5: 1, G5: 2}
NO_STARTUP = Timing(0, 0)


def flexible(name: str, submit_s: float = 0.0, checkpoint_every_s: float | None = None) -> TraceJob:
    """One p5 for 1000 s, else two g5 for 2000 s."""
    alternatives = (TracePreference(G5, 2, 2000.0),)
    return TraceJob(name, submit_s, 0, P5, 1, 1000.0, checkpoint_every_s=checkpoint_every_s, alternatives=alternatives)


def runs(result: Result, name: str) -> list[tuple[str, float, float | None, str | None]]:
    return [(s.pool, s.start_s, s.end_s, s.outcome) for s in result.segments if s.job == name]


def test_a_flexible_job_starts_at_its_second_preference_when_the_first_is_busy_and_trains_its_duration() -> None:
    trace = [TraceJob("busy", 0.0, 0, P5, 1, 3000.0), flexible("flex")]

    result = simulate(trace, SchedulerConfig(pools=POOLS), timing=NO_STARTUP)

    assert runs(result, "flex") == [(G5, 0.0, 2000.0, "completed")]
    assert result.waits["flex"] == 0.0
    assert result.metrics["placement"] == {
        "flexible_jobs": 1,
        "started_elsewhere": 1.0,
        "flexible_wait_s": {"jobs": 1, "p50": 0.0, "p95": 0.0, "max": 0.0},
        "selected": {"flex": G5},
    }
    assert result.metrics["pools"][G5]["goodput"] == round(2 * 2000.0 / (2 * 3000.0), 6)


def test_a_flexible_job_takes_its_first_preference_when_it_fits() -> None:
    result = simulate([flexible("flex")], SchedulerConfig(pools=POOLS), timing=NO_STARTUP)

    assert runs(result, "flex") == [(P5, 0.0, 1000.0, "completed")]
    assert result.metrics["placement"]["started_elsewhere"] == 0.0


def test_the_baselines_run_a_flexible_job_at_its_first_preference() -> None:
    trace = [TraceJob("busy", 0.0, 0, P5, 1, 3000.0), flexible("flex")]

    for policy in (PolicyName.FIFO, PolicyName.SEED):
        result = simulate(trace, SchedulerConfig(pools=POOLS), policy, timing=NO_STARTUP)

        assert runs(result, "flex") == [(P5, 3000.0, 4000.0, "completed")], policy
        assert result.waits["flex"] == 3000.0


def test_a_job_preempted_on_one_type_keeps_its_share_of_the_work_on_the_other() -> None:
    """flex trains 550 s on p5 (checkpoint at 500: half its work, 50 s lost); `urgent` preempts it,
    the stop lands at 610 and flex resumes on g5, where the other half takes 1000 s."""
    trace = [flexible("flex", checkpoint_every_s=100.0), TraceJob("urgent", 550.0, 5, P5, 1, 100.0)]

    result = simulate(trace, SchedulerConfig(pools=POOLS), timing=NO_STARTUP)

    assert runs(result, "flex") == [(P5, 0.0, 610.0, "preempted"), (G5, 610.0, 1610.0, "completed")]
    assert result.metrics["lost_work_s"] == 50.0
    makespan = result.metrics["makespan_s"]
    assert result.metrics["pools"][P5]["goodput"] == round((500.0 + 100.0) / makespan, 6)
    assert result.metrics["pools"][G5]["goodput"] == round(2 * 1000.0 / (2 * makespan), 6)


def test_lost_work_counts_seconds_at_the_placement_that_lost_them() -> None:
    """On g5 flex does half a second of its work per second: 300 s there without a checkpoint is
    300 s lost (150 s of its p5 duration)."""
    trace = [
        TraceJob("busy", 0.0, 0, P5, 1, 5000.0),
        flexible("flex"),
        TraceJob("urgent", 300.0, 5, G5, 2, 100.0),
    ]

    result = simulate(trace, SchedulerConfig(pools=POOLS), timing=NO_STARTUP)

    assert runs(result, "flex")[0] == (G5, 0.0, 360.0, "preempted")
    assert result.metrics["lost_work_by_cause_s"]["preemption"] == 300.0


def test_a_wait_in_every_pool_makes_each_pool_contended() -> None:
    """flex waits while both pools are full: both are contended, neither idle while it waits."""
    trace = [TraceJob("p5", 0.0, 0, P5, 1, 1000.0), TraceJob("g5", 0.0, 0, G5, 2, 500.0), flexible("flex", 100.0)]

    result = simulate(trace, SchedulerConfig(pools=POOLS), timing=NO_STARTUP)

    assert runs(result, "flex") == [(G5, 500.0, 2500.0, "completed")]
    for pool in (P5, G5):
        assert result.metrics["pools"][pool]["contended_s"] == 400.0
        assert result.metrics["pools"][pool]["utilization_while_waiting"] == 1.0


def test_a_trace_without_flexible_jobs_reports_no_placement() -> None:
    result = simulate([TraceJob("a", 0.0, 0, P5, 1, 10.0)], SchedulerConfig(pools=POOLS), timing=NO_STARTUP)

    assert "placement" not in result.metrics


SIZES = {P5: 4, G5: 6}


@st.composite
def flexible_traces(draw: st.DrawFn) -> list[TraceJob]:
    jobs = []
    for number in range(draw(st.integers(2, 7))):
        pools = draw(st.permutations(list(SIZES)))[: draw(st.integers(1, 2))]
        preferences = [
            TracePreference(pool, draw(st.integers(1, SIZES[pool])), float(draw(st.integers(1, 20)) * 100))
            for pool in pools
        ]
        first, *alternatives = preferences
        jobs.append(
            TraceJob(
                name=f"job-{number}",
                submit_s=float(draw(st.integers(0, 30)) * 100),
                priority=draw(st.integers(0, 2)),
                pool=first.pool,
                instances=first.instances,
                duration_s=first.duration_s,
                checkpoint_every_s=draw(st.sampled_from([None, 300.0])),
                alternatives=tuple(alternatives),
            )
        )
    return jobs


@settings(max_examples=settings.default.max_examples * 40 // 100, deadline=None)
@given(trace=flexible_traces(), backfill=st.booleans())
def test_no_pool_is_ever_over_committed_and_a_job_holds_one_place_at_a_time(
    trace: list[TraceJob], backfill: bool
) -> None:
    """At every pass the live jobs fit their pools; every attempt holds its placement's instances
    in one pool, never beside another attempt of its job; every job completes."""
    config = SchedulerConfig(pools=SIZES, backfill=backfill)
    held_at_passes: list[Counter[str]] = []

    def observe(snapshot: Snapshot, actions: Sequence[Action], now: object) -> None:
        held: Counter[str] = Counter()
        for job in snapshot.jobs:
            if job.is_live:
                held.update(job.demand)
        held_at_passes.append(held)

    result = simulate(trace, config, timing=Timing(60, 180, seed=1), observe=observe)

    assert all(held[pool] <= SIZES[pool] for held in held_at_passes for pool in held)
    assert result.metrics["refused_starts"] == 0
    assert result.metrics["unfinished"] == []
    instances = {(job.name, preference.pool): preference.instances for job in trace for preference in _places(job)}
    for segment in result.segments:
        assert len(segment.slots) == instances[(segment.job, segment.pool)]
    for moment in {segment.start_s for segment in result.segments}:
        open_now = [s for s in result.segments if s.start_s <= moment < (s.end_s or float("inf"))]
        for pool, capacity in SIZES.items():
            assert sum(len(s.slots) for s in open_now if s.pool == pool) <= capacity
        assert len({s.job for s in open_now}) == len(open_now)


def _places(job: TraceJob) -> tuple[TracePreference, ...]:
    return job.preferences or (TracePreference(job.pool, job.instances, job.duration_s),)


def test_a_flexible_job_with_nothing_left_to_train_replays_without_dividing_by_zero() -> None:
    """A start estimate replays a job already due as one with no training left: at any preference
    it ends at once (the forecast knows one duration for every preference)."""
    due = TraceJob("due", 0.0, 0, P5, 1, 0.0, alternatives=(TracePreference(G5, 2, 0.0),))
    result = simulate([TraceJob("busy", 0.0, 0, P5, 1, 3000.0), due], SchedulerConfig(pools=POOLS), timing=NO_STARTUP)
    assert runs(result, "due") == [(G5, 0.0, 0.0, "completed")]
